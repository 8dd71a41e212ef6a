package result

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/workloads"
)

const workload = `
name: w
title: W
servers: [ref, a, b]
reference: ref
cells:
  - name: c
    steps: [{consume: {}}]
    columns: [x.records_per_s, {figure: x.records_per_s, over: ref}, y_s]
targets:
  - {name: ratio, cell: c, server: a, figure: x.records_per_s, over: ref, at_least: 0.8, gate: true}
  - {name: noisy ratio, cell: c, server: b, figure: x.records_per_s, over: ref, at_least: 0.8}
  - {name: latency, cell: c, server: a, figure: y_s, stat: p90, at_most: 0.5}
  - {name: latency, cell: c, server: b, figure: y_s, at_most: 0.5}
`

func sample(t *testing.T) *Result {
	w, err := workloads.Parse([]byte(workload))
	require.NoError(t, err)
	r := &Result{Workload: *w}
	for i, v := range []float64{100, 100, 100} {
		r.Add("c", "ref", Rep{Figures: map[string]float64{"x.records_per_s": v}})
		r.Add("c", "a", Rep{Figures: map[string]float64{"x.records_per_s": 90, "y_s": 0.1 * float64(i+1)}})
		// b's runs differ by 50 %: 0.8 lies within its ratio give or take that.
		r.Add("c", "b", Rep{Figures: map[string]float64{"x.records_per_s": 60 + 15*float64(i)}})
	}
	r.Add("c", "b", Rep{Error: "start: boom"})
	r.Checks = r.Judge()
	return r
}

func TestJudge(t *testing.T) {
	var got []string
	for _, c := range sample(t).Checks {
		got = append(got, c.Name+": "+c.Verdict)
	}
	assert.Equal(t, []string{"ratio, a: " + bench.Pass, "noisy ratio, b: " + bench.Unresolved,
		"latency, a: " + bench.Pass, "latency, b: " + bench.Missing}, got)
}

func TestRatiosGate(t *testing.T) {
	got := map[string]bool{}
	for _, r := range sample(t).Ratios() {
		got[r.Name] = r.Gate
	}
	assert.Equal(t, map[string]bool{"c: x.records_per_s over ref, a": true, "c: x.records_per_s over ref, b": false,
		"c: y_s p90 over its bound, a": false}, got, "b has no y_s: no margin")
}

func TestWriteReadRender(t *testing.T) {
	r := sample(t)
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	md := string(r.Markdown())
	for _, want := range []string{"# W", "| server | x records/s | × ref | y | reps ok |", "| a | 90 | 0.90× | 200 ms [100 ms–300 ms] | 3/3 |",
		"| b | 75 [60–90] | 0.75× | – | 3/4 |", "## Failed measurements", "c on b, rep 4: start: boom"} {
		assert.Contains(t, md, want)
	}
	again, err := Read(filepath.Join(dir, "w.json"))
	require.NoError(t, err)
	assert.Equal(t, md, string(again.Markdown()))
	_, err = Parse([]byte(`{"cells": [{"target": "kfake"}]}`))
	assert.ErrorContains(t, err, "older format")
}
