package runner_test

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/runner"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
)

// TestMain lets the test binary serve kfake, the server the tests run
// workloads on.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == harness.ServeKfakeCmd {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := harness.ServeKfake(ctx, os.Args[2:], os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRun runs a workload on kfake: repetitions interleaved, a cell of
// fewer repetitions in the last one reading an earlier cell's rate,
// rounds after a setup, figures per step, and a failing step that fails
// its repetition only.
func TestRun(t *testing.T) {
	w, err := workloads.Parse([]byte(`
name: t
title: T
servers: [kfake]
reps: 2
topology: {partitions: 2}
cells:
  - name: closed
    steps:
      - produce: {records: 2000, record_bytes: 50, acks: all, idempotent: true}
      - consume: {}
    columns: [produce.records_per_s]
  - name: open
    reps: 1
    rounds: 2
    setup:
      - {as: first, produce: {records: 100, record_bytes: 50, acks: "1"}}
    steps:
      - produce: {duration: 300ms, record_bytes: 50, acks: all, idempotent: true, rate_of: {cell: closed, figure: produce.records_per_s, times: 0.01}}
    columns: [produce.rate_per_s]
  - name: txn
    reps: 1
    steps:
      - produce: {records: 200, record_bytes: 50, acks: all, idempotent: true, metadata_min_age: 10ms,
                  transaction: {records: 20, abort_every: 2}}
      - begin_txn: {records: 5}
      - end_txn: {abort: true}
      - {as: committed, consume: {read_committed: true}}
      - {as: all, consume: {}}
    columns: [produce.txns]
  - name: broken
    reps: 1
    steps:
      - kill: {node: controller}
    columns: [kill.node]
targets:
  - {name: read back, cell: closed, server: kfake, figure: consume.records, per: produce.records, at_least: 1}
`))
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Config{
		Workload: w, Dir: t.TempDir(),
		Start: func(string, workloads.Topology) harness.Starter { return harness.Kfake(self, 2, nil) },
	})
	require.NoError(t, err)

	closed := res.Cell("closed", "kfake")
	require.Len(t, closed.Reps, 2)
	assert.Equal(t, 2, closed.Finished(), "%v", closed.Errors())
	assert.EqualValues(t, 2000, closed.Reps[0].Figures["consume.records"])
	assert.Positive(t, closed.Reps[0].Figures["server.peak_rss_bytes"], "the server's own figure")

	open := res.Cell("open", "kfake")
	require.Len(t, open.Reps, 2, "a repetition per round")
	assert.Equal(t, 2, open.Finished(), "%v", open.Errors())
	want := closed.Stat("produce.records_per_s", "") * 0.01
	assert.InDelta(t, want, open.Reps[0].Figures["produce.rate_per_s"], want*1e-9, "the rate of both repetitions of closed")
	assert.EqualValues(t, 100, open.Reps[1].Figures["first.records"], "setup figures go to every round")

	txn := res.Cell("txn", "kfake")
	require.Len(t, txn.Reps, 1)
	require.Empty(t, txn.Errors())
	figs := txn.Reps[0].Figures
	assert.EqualValues(t, 5, figs["produce.txns"], "every other transaction aborted")
	assert.EqualValues(t, 100, figs["produce.records"], "the committed records")
	assert.EqualValues(t, 100, figs["committed.records"], "read_committed skips the aborted transactions")
	assert.EqualValues(t, 205, figs["all.records"], "read_uncommitted reads them too")

	broken := res.Cell("broken", "kfake")
	require.Len(t, broken.Reps, 1)
	assert.Contains(t, broken.Reps[0].Error, "needs a cluster")

	require.Len(t, res.Checks, 1)
	assert.Equal(t, "PASS", res.Checks[0].Verdict, res.Checks[0].String())
}
