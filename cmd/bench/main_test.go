package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/report"
	"github.com/minikafka/minikafka/broker/harness"
)

// TestMain lets the test binary serve kfake for the end-to-end test, as
// the bench binary does for itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == harness.ServeKfakeCmd {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		profile string
		ok      bool
	}{
		{"defaults", nil, "quick", true},
		{"full", []string{"-profile", "full"}, "full", true},
		{"full with =", []string{"-reps=2", "--profile=full"}, "full", true},
		{"unknown profile", []string{"-profile", "huge"}, "", false},
		{"another profile's flag", []string{"-profile", "quick", "-rss-records", "5"}, "", false},
		{"stray argument", []string{"now"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr strings.Builder
			e, _, err := parse(c.args, &stderr)
			if !c.ok {
				assert.ErrorIs(t, err, errUsage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.profile, e.profile)
			assert.True(t, strings.HasPrefix(e.command, "go run ./cmd/bench"))
		})
	}
	_, pl, err := parse([]string{"-reps", "5", "-duration", "2s", "-warm-up", "0"}, &strings.Builder{})
	require.NoError(t, err)
	p := pl.(*matrixPlan).profile()
	assert.Equal(t, 5, p.Reps)
	assert.Equal(t, 2*time.Second, p.Duration)
	assert.Zero(t, p.WarmUp)
}

func TestHelpListsEveryProfile(t *testing.T) {
	var stderr strings.Builder
	assert.Equal(t, 0, run(context.Background(), []string{"-help"}, &strings.Builder{}, &stderr))
	for _, n := range profileNames() {
		assert.Contains(t, stderr.String(), "  "+n+" ")
	}
	assert.Contains(t, stderr.String(), "-targets", "the default profile's flags")
}

func TestRunNameDoesNotOverwrite(t *testing.T) {
	out := t.TempDir()
	o := &matrixPlan{}
	p := matrix.Profiles["quick"]
	first := o.runName(out, p)
	assert.True(t, strings.HasSuffix(first, "-quick"))
	require.NoError(t, os.MkdirAll(filepath.Join(out, first), 0o755))
	assert.Equal(t, first+"-2", o.runName(out, p))
	o.name = "mine"
	assert.Equal(t, "mine", o.runName(out, p))
}

func TestBuildTargets(t *testing.T) {
	bins := binaries{self: "/self", broker: "/broker", peers: "/peers"}
	ts := buildTargets([]string{"segment", "memory", "nosuch", "kfake", "nats"}, bins, 8, nil)
	require.Len(t, ts, 5)
	assert.Equal(t, matrix.KindEngine, ts[0].Kind)
	assert.True(t, ts[0].Durable && ts[0].CountsFsyncs, "segment is durable and does its I/O through the instrumented filesystem")
	assert.Equal(t, matrix.KindReference, ts[1].Kind, "the memory engine is the reference line")
	assert.Contains(t, ts[2].Note, "not an engine of this build")
	assert.Equal(t, matrix.KindPeer, ts[3].Kind)
	assert.IsType(t, matrix.NATS{}, ts[4].Driver)
	lines := setupLines([]string{"kfake", "nats"}, bins, 8)
	assert.Len(t, lines, 4)
}

func TestRequireVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "go.mod")
	require.NoError(t, os.WriteFile(path, []byte("module x\n\nrequire (\n\tgithub.com/a/b v1.2.3\n\tgithub.com/a/bc v9.9.9 // indirect\n)\nrequire github.com/c/d v0.1.0\n"), 0o644))
	assert.Equal(t, "v1.2.3", requireVersion(path, "github.com/a/b"))
	assert.Equal(t, "v0.1.0", requireVersion(path, "github.com/c/d"))
	assert.Empty(t, requireVersion(path, "github.com/e/f"))
}

// TestEnginesQuickRun runs the engines profile on two cheap subjects and
// renders it again from its JSON.
func TestEnginesQuickRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	var stderr strings.Builder
	code := run(context.Background(), []string{"-profile", "engines", "-quick", "-engines", "memory,raw", "-records", "3000",
		"-append-time", "10ms", "-progress=false", "-dir", t.TempDir(), "-out", out}, &strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "engines.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "-engines memory,raw", "the report names its command line")
	assert.Contains(t, string(md), "| memory |")
	assert.Contains(t, string(md), "| raw |")
	assert.NotContains(t, stderr.String(), "segment", "no target of a subject that did not run")

	again := filepath.Join(t.TempDir(), "again")
	require.Equal(t, 0, run(context.Background(), []string{"-profile", "engines", "-render", filepath.Join(out, "engines.json"), "-out", again},
		&strings.Builder{}, &stderr), stderr.String())
	md2, err := os.ReadFile(filepath.Join(again, "engines.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2), "the JSON holds everything the report shows")

	assert.Equal(t, 1, run(context.Background(), []string{"-profile", "engines", "-quick", "-engines", "nope", "-out", t.TempDir(),
		"-dir", t.TempDir(), "-progress=false"}, &strings.Builder{}, &strings.Builder{}), "an unknown engine fails the run")
}

// TestGroupsOnMemory runs the groups workload in its quick form on the
// memory engine.
func TestGroupsOnMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on rebalances")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", "groups", "-quick", "-servers", "memory", "-dir", t.TempDir(), "-out", out, "-progress=false"},
		&strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "groups.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| memory |")
	assert.NotContains(t, string(md), "## Failed measurements", stderr.String())
	assert.NotContains(t, string(md), "MISSING", stderr.String())
}

// TestBrokerKfakeOnly runs the broker workload end to end with kfake
// alone (no broker build; the targets on segment are left out), and
// renders the report again from its JSON.
func TestBrokerKfakeOnly(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", "broker", "-quick", "-servers", "kfake", "-broker-bin", "/nonexistent/broker",
		"-dir", t.TempDir(), "-out", out, "-progress=false"}, &strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.NotContains(t, stderr.String(), "MISSING")
	md, err := os.ReadFile(filepath.Join(out, "broker.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| kfake | ")
	assert.Contains(t, string(md), "| 1/1 |")
	assert.Contains(t, string(md), "A smoke run")
	assert.Contains(t, string(md), "command: `go run ./cmd/bench -profile broker -quick -servers kfake")

	again := t.TempDir()
	require.Equal(t, 0, run(ctx, []string{"-profile", "broker", "-render", filepath.Join(out, "broker.json"), "-out", again},
		&strings.Builder{}, &stderr), stderr.String())
	md2, err := os.ReadFile(filepath.Join(again, "broker.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2))

	// The columns come from today's workload file: a run recorded without
	// them renders with them.
	raw, err := os.ReadFile(filepath.Join(out, "broker.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, c := range doc["workload"].(map[string]any)["cells"].([]any) {
		c.(map[string]any)["columns"] = []any{}
	}
	raw, err = json.Marshal(doc)
	require.NoError(t, err)
	stripped := filepath.Join(t.TempDir(), "broker.json")
	require.NoError(t, os.WriteFile(stripped, raw, 0o644))
	third := t.TempDir()
	require.Equal(t, 0, run(ctx, []string{"-profile", "broker", "-render", stripped, "-out", third},
		&strings.Builder{}, &stderr), stderr.String())
	md3, err := os.ReadFile(filepath.Join(third, "broker.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md3))
}

// TestWorkloadFile runs a workload that is only a file: a new benchmark
// needs no Go code.
func TestWorkloadFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
title: Mine
servers: [kfake]
cells:
  - name: small
    steps:
      - produce: {records: 500, record_bytes: 10, acks: "1"}
      - consume: {}
    columns: [consume.records]
targets:
  - {name: everything read, cell: small, server: kfake, figure: consume.records, at_least: 500}
`), 0o644))
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", file, "-broker-bin", "/nonexistent/broker", "-dir", t.TempDir(), "-out", out, "-progress=false"},
		&strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "mine.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| everything read, kfake | 500 | ≥ 500 | **PASS** |")
	assert.Contains(t, string(md), "| kfake | 500 | 1/1 |")
}

// TestBenchEndToEnd runs the command on kfake alone with tiny phases: it
// measures, writes the report with its charts and the index, and a
// target whose binary is missing fails its cells, not the run.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", "quick", "-targets", "kfake,segment", "-broker-bin", "/nonexistent/broker",
		"-no-recovery", "-duration", "300ms", "-warm-up", "0", "-out", out, "-name", "e2e", "-dir", t.TempDir()}, &strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "e2e", report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| kfake |")
	assert.Contains(t, string(md), "1KiB-1-acks=all-sync=always on segment, rep 1: start:", "the failed target's cells are listed")
	_, err = os.Stat(filepath.Join(out, "e2e", "e2e-concurrency.png"))
	assert.NoError(t, err)
	idx, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	require.NoError(t, err)
	assert.Contains(t, string(idx), "[e2e](e2e/report.md)")

	var stderr2 strings.Builder
	require.Equal(t, 0, run(ctx, []string{"-render", filepath.Join(out, "e2e")}, &strings.Builder{}, &stderr2), stderr2.String())
}

// TestClusterSmoke runs the cluster workload in its quick form on one
// engine, and renders the report again from its JSON.
func TestClusterSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/broker and starts a cluster")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", "cluster", "-quick", "-servers", "segment", "-dir", t.TempDir(), "-out", out, "-progress=false"},
		&strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "cluster.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "## Failed measurements", stderr.String())
	assert.Contains(t, string(md), "| 1/1 |", "the failover table has its kill")
	assert.Contains(t, string(md), "| 20/20 |", "the creation table has its topics")
	assert.FileExists(t, filepath.Join(out, "cluster-topics.png"))

	again := t.TempDir()
	require.Equal(t, 0, run(ctx, []string{"-profile", "cluster", "-render", filepath.Join(out, "cluster.json"), "-out", again},
		&strings.Builder{}, &stderr), stderr.String())
	md2, err := os.ReadFile(filepath.Join(again, "cluster.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2))
}

// TestLoadsAndReassignment runs a small workload file of loads beside a
// reassignment on a four-broker cluster: the loads' figures come out per
// step and what was acknowledged is read back.
func TestLoadsAndReassignment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/broker and starts a cluster")
	}
	file := filepath.Join(t.TempDir(), "move.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
title: A small move
servers: [segment]
topology: {brokers: 4, broker_args: [-min-insync-replicas, "2"]}
cells:
  - name: move
    steps:
      - create_topic: {assignment: [[1, 2, 3], [2, 3, 1]]}
      - wait: {isr: 3}
      - load: {record_bytes: 1024, in_flight: 256}
      - fill: {bytes: 4000000}
      - track: {rate: 100, record_bytes: 100}
      - {as: before, pause: 500ms}
      - reassign: {from: 1, to: 4, throttle: 2}
    columns: [reassign.s, before.load_records_per_s, reassign.longest_gap_s, audit.acked]
targets:
  - {name: lost, cell: move, server: segment, figure: audit.lost, at_most: 0}
  - {name: read back, cell: move, server: segment, figure: audit.acked, at_least: 1}
`), 0o644))
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", file, "-dir", t.TempDir(), "-out", out, "-progress=false"}, &strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "move.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "## Failed measurements", stderr.String())
	assert.Contains(t, string(md), "| lost, segment | 0 | ≤ 0 | **PASS** |")
	assert.Contains(t, string(md), "| read back, segment |")
	assert.NotContains(t, string(md), "MISSING")
}

func TestNoServerToMeasure(t *testing.T) {
	var stderr strings.Builder
	code := run(context.Background(), []string{"-profile", "cluster", "-servers", "nosuch"}, &strings.Builder{}, &stderr)
	assert.Equal(t, 2, code, stderr.String())
}

// TestReplicationSmoke runs the replication workload in its quick form
// on segment and renders the report again from its JSON.
func TestReplicationSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/broker and starts a cluster")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-profile", "replication", "-quick", "-servers", "segment", "-dir", t.TempDir(), "-out", out, "-progress=false"},
		&strings.Builder{}, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(filepath.Join(out, "replication.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "## Failed measurements", stderr.String())
	assert.NotContains(t, string(md), "MISSING", stderr.String())

	again := t.TempDir()
	require.Equal(t, 0, run(ctx, []string{"-profile", "replication", "-render", filepath.Join(out, "replication.json"), "-out", again},
		&strings.Builder{}, &stderr), stderr.String())
	md2, err := os.ReadFile(filepath.Join(again, "replication.md"))
	require.NoError(t, err)
	assert.Equal(t, string(md), string(md2))
}
