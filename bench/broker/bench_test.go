package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/proc"
	"github.com/minikafka/minikafka/bench/server"
)

// childEnv makes the test binary act as a kfake server child, so the
// child-process path runs without building anything.
const childEnv = "BENCH_BROKER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "kfake" {
		serveKfake()
		return
	}
	os.Exit(m.Run())
}

func serveKfake() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := server.ServeKfake(ctx, nil, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func kfakeChild(t *testing.T) Target {
	self, err := os.Executable()
	require.NoError(t, err)
	return Target{Name: "kfake", Reference: true, Start: func(ctx context.Context, dir string) (Server, error) {
		return startChildEnv(ctx, self)
	}}
}

func startChildEnv(ctx context.Context, self string) (*proc.Child, error) {
	os.Setenv(childEnv, "kfake")
	defer os.Unsetenv(childEnv)
	return proc.Start(ctx, proc.Config{Path: self, Args: []string{"-test.run=^$"}, Ready: 20 * time.Second})
}

// TestRunWritesReport runs the whole pipeline on tiny sizes: kfake as the
// reference, a second kfake posing as the target engine, and a target that
// cannot start. No figure is asserted, only that the report says what ran.
func TestRunWritesReport(t *testing.T) {
	ref := kfakeChild(t)
	seg := ref
	seg.Name, seg.Reference = TargetEngine, false
	broken := Target{Name: "broken", Start: func(context.Context, string) (Server, error) {
		return nil, errors.New("no such binary")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log strings.Builder
	res, err := Run(ctx, Config{
		Targets:    []Target{ref, seg, broken},
		RSSTargets: []Target{seg},
		Records:    2000, RSSRecords: 3000, Reps: 2, Partitions: 3, RecordBytes: 50,
		Dir: t.TempDir(), Log: &log, Command: "go test", Setup: []string{"servers: test children"},
	})
	require.NoError(t, err)
	require.Len(t, res.Cells, 3)
	assert.Len(t, res.Cells[0].Reps, 2)
	assert.True(t, res.Cells[0].Spread(produceOf).OK(), log.String())
	assert.Len(t, res.Cells[2].Errors(), 2, "the broken target failed in both repetitions")
	require.Len(t, res.RSS, 1)
	assert.Positive(t, res.RSS[0].PeakRSS)

	checks := res.Checks()
	require.Len(t, checks, 3)
	for _, c := range checks {
		assert.Contains(t, []string{Pass, Fail}, c.Verdict, "%s has a figure: %+v", c.Name, c)
	}

	out := t.TempDir()
	require.NoError(t, res.Write(out))
	md, err := os.ReadFile(filepath.Join(out, "broker.md"))
	require.NoError(t, err)
	for _, want := range []string{"## Targets", "## Throughput", "## Memory", "## Setup", "broken rep 1: start: no such binary", "command: `go test`", "servers: test children"} {
		assert.Contains(t, string(md), want)
	}
	var js map[string]any
	data, err := os.ReadFile(filepath.Join(out, "broker.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &js))
	assert.Contains(t, js, "checks")
}

func TestChecksMissingWithoutTargetEngine(t *testing.T) {
	r := &Result{Cells: []*Cell{{Target: "kfake", Reference: true, Reps: []Rep{{Produce: 1, Consume: 1}}}}}
	for _, c := range r.Checks() {
		assert.Equal(t, Missing, c.Verdict, c.Name)
	}
}
