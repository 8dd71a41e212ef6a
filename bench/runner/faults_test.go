package runner_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/runner"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// ciFaults are the cells of the fault matrix CI runs.
var ciFaults = []string{"kill-leader", "isolate-leader", "rolling-restart"}

// TestFaultsCI is the fault matrix's CI profile: the faults workload on
// the segment engine, three of its faults (kill -9 of a leader, a leader
// cut off from its followers while clients still reach it, a rolling
// restart), one round each; every acknowledged record is read back once,
// where it was acknowledged, no consumer saw an offset go back or skip,
// and every partition acknowledges again after each heal. It needs root
// and iproute2 for the hosts' network namespaces and skips, saying so,
// without them.
func TestFaultsCI(t *testing.T) {
	lab, err := netlab.New(0)
	if errors.Is(err, netlab.ErrUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.NoError(t, lab.Close())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin, err := harness.BuildBroker(ctx, t.TempDir(), "", os.Stderr)
	require.NoError(t, err)

	w, err := workloads.Load("faults")
	require.NoError(t, err)
	w = w.Shrunk()
	w.Cells = slices.DeleteFunc(w.Cells, func(c workloads.Cell) bool { return !slices.Contains(ciFaults, c.Name) })
	for i := range w.Cells {
		w.Cells[i].Servers = []string{"segment"}
	}
	w.Targets = nil
	res, err := runner.Run(ctx, runner.Config{
		Workload: w, Dir: t.TempDir(), Log: testLog{t},
		Cluster: func(ctx context.Context, cc harness.ClusterConfig) (*harness.Cluster, error) {
			cc.Bin = bin
			return harness.StartCluster(ctx, cc)
		},
	})
	require.NoError(t, err)
	for _, name := range ciFaults {
		t.Run(name, func(t *testing.T) {
			c := res.Cell(name, "segment")
			require.NotNil(t, c)
			require.Len(t, c.Reps, 1)
			require.Empty(t, c.Errors())
			figs := c.Reps[0].Figures
			assert.Positive(t, figs["audit.acked"], "the producer was acknowledged")
			assert.Zero(t, figs["audit.anomalies"], "anomalies: %v", figs)
		})
	}
}

// testLog forwards the run's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}
