package brokerbench

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

	"github.com/minikafka/minikafka/bench"
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
	return Target{Name: "kfake", Reference: true, Start: func(ctx context.Context, _, _ string) (*server.Server, error) {
		c, err := startChildEnv(ctx, self)
		if err != nil {
			return nil, err
		}
		return &server.Server{Child: c}, nil
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
	broken := Target{Name: "broken", Start: server.Failing(errors.New("no such binary"))}
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
	require.Len(t, res.Cells, 4)
	assert.Len(t, res.Cells[0].Reps, 2)
	assert.True(t, res.Cells[0].Spread(ProduceRate).OK(), log.String())
	assert.Len(t, res.Cells[2].Errors(), 2, "the broken target failed in both repetitions")
	mem := res.Cell(TargetEngine, Memory)
	require.NotNil(t, mem)
	assert.Positive(t, mem.Reps[0].PeakRSS)

	require.Len(t, res.Checks, 3)
	for _, c := range res.Checks {
		assert.Contains(t, []string{bench.Pass, bench.Fail}, c.Verdict, "%s has a figure: %+v", c.Name, c)
	}
	ratios := res.Ratios()
	require.Len(t, ratios, 2, "segment's produce and consume against kfake; the broken target has none")
	assert.True(t, ratios[0].Gate)

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
	again, err := Load(filepath.Join(out, ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(again.Report()), "the JSON holds everything the report shows")
}

func TestChecksMissingWithoutTargetEngine(t *testing.T) {
	r := &Result{Cells: []*Cell{{Cell: bench.Cell[Rep]{Target: "kfake", Workload: Throughput, Reps: []Rep{{Produce: 1, Consume: 1}}}, Reference: true}}}
	for _, c := range r.Judge() {
		assert.Equal(t, bench.Missing, c.Verdict, c.Name)
	}
}
