package interop

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
)

var kgoTxnRecords = flag.Int("kgo.txn.records", 20000,
	"records franz-go's TestTxnEtl produces per run (its own default is 500000)")

// TestFranzGoTxnSuite runs franz-go's own transaction tests (TestTxn* of
// pkg/kgo, the exactly-once ETL chain of three consumer groups that
// consume, transform and produce in transactions, with consumers joining
// and leaving) against the broker on every durable engine: alone, and as a
// three-broker cluster with its topics at RF 3. The suite is built from
// the module's own copy of franz-go, so it is the version the broker is
// tested with everywhere else. Its KIP-848 cases skip: the broker serves
// the classic group protocol only.
func TestFranzGoTxnSuite(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to build franz-go's tests with")
		}
	}
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		if !d.Caps.Durable {
			continue
		}
		for _, brokers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d-brokers", name, brokers), func(t *testing.T) {
				opts := []brokertest.Option{brokertest.Engine(name), brokertest.Configure(func(c *broker.Config) {
					c.EngineOptions.Sync = engine.SyncAlways
				})}
				var seeds []string
				if brokers == 1 {
					seeds = append(seeds, brokertest.Start(t, opts...).Addr)
				} else {
					for _, nd := range brokertest.StartCluster(t, brokers, opts...).Nodes {
						seeds = append(seeds, nd.Addr)
					}
				}
				runKgoTxnSuite(t, goBin, seeds, brokers)
			})
		}
	}
}

// runKgoTxnSuite runs `go test -run ^TestTxn pkg/kgo` against seeds.
func runKgoTxnSuite(t *testing.T, goBin string, seeds []string, rf int) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "test", "github.com/twmb/franz-go/pkg/kgo", "-run", "^TestTxn", "-count=1", "-v")
	cmd.Dir = ".." // the module's root: its go.mod pins franz-go
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+strings.Join(seeds, ","),
		fmt.Sprintf("KGO_TEST_RF=%d", rf),
		fmt.Sprintf("KGO_TEST_RECORDS=%d", *kgoTxnRecords),
		"KGO_LOG_LEVEL=none",
		"GOFLAGS=",
	)
	out, err := cmd.CombinedOutput()
	tail := string(out)
	if len(tail) > 4000 {
		tail = "..." + tail[len(tail)-4000:]
	}
	require.NoError(t, err, "franz-go's transaction tests:\n%s", tail)
	require.Contains(t, string(out), "--- PASS: TestTxnEtl", "franz-go's TestTxnEtl did not run:\n%s", tail)
	require.NotContains(t, string(out), "--- FAIL", tail)
}
