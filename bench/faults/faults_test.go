package faults_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/faults"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// brokerBin is the cmd/broker binary TestMain builds.
var brokerBin string

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithBroker(&brokerBin, m.Run))
}

// TestCIProfile is the fault matrix's CI profile: the segment engine and
// three faults (kill -9 of a leader, a leader cut off from its followers
// while clients still reach it, a rolling restart), one round each, under franz-go and kcat load; every acknowledged record is read
// back once, where it was acknowledged, and no consumer saw an offset go
// back or skip; every partition acknowledges again after each heal. It
// needs root and iproute2 for the hosts' network namespaces and skips,
// saying so, without them.
func TestCIProfile(t *testing.T) {
	lab, err := netlab.New(0)
	if errors.Is(err, netlab.ErrUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.NoError(t, lab.Close())
	kcat, _ := exec.LookPath("kcat")
	if kcat == "" && os.Getenv("CI") != "" {
		t.Fatal("kcat is not installed but CI is set: .ci/run installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := faults.Run(ctx, faults.Config{
		Servers: bench.Servers{Bin: brokerBin, Dir: t.TempDir(), Log: testLog{t, &progress}, ServerLog: serverLog{t}},
		Engines: []string{"segment"}, Faults: faults.CI, Rounds: 1,
		Rate: 300, KcatBatch: faults.DefaultKcatBatch, Kcat: kcat,
	})
	require.NoError(t, err)
	require.Len(t, res.Cells, len(faults.CI))
	for _, c := range res.Cells {
		t.Run(c.Fault, func(t *testing.T) {
			require.Empty(t, c.Error)
			require.Len(t, c.Rounds, 1)
			assert.Empty(t, c.Rounds[0].Error)
			assert.Positive(t, c.AckedFranz, "franz-go was acknowledged")
			if kcat != "" {
				assert.Positive(t, c.AckedKcat, "kcat was acknowledged")
			}
			assert.Zero(t, c.Anomalies.Total(), "anomalies: %v", c.Anomalies.Examples)
		})
	}
}

// testLog forwards the run's progress lines to the test log.
type testLog struct {
	t *testing.T
	b *strings.Builder
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// serverLog forwards the brokers' output to the test log with -v.
type serverLog struct{ t *testing.T }

func (l serverLog) Write(p []byte) (int, error) {
	if testing.Verbose() {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
