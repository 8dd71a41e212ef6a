package bench_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/minikafka/minikafka/bench"
)

func TestCompare(t *testing.T) {
	small := []bench.Ratio{{Name: "x", Value: 0.9, Gate: true}}
	changes, drops := bench.Compare([]bench.Ratio{{Name: "x", Value: 1, Gate: true}}, small, 0.15, false)
	assert.Zero(t, drops, "a 10% drop is inside the tolerance")
	assert.Equal(t, bench.StatusOK, changes[0].Status)
	_, drops = bench.Compare([]bench.Ratio{{Name: "x", Value: 2, Gate: true}}, small, 0.15, false)
	assert.Equal(t, 1, drops, "a gating ratio that halved")
	ungated := []bench.Ratio{{Name: "y", Value: 0.5}}
	changes, drops = bench.Compare([]bench.Ratio{{Name: "y", Value: 1}}, ungated, 0.15, false)
	assert.Zero(t, drops, "a ratio that does not gate is reported, not failed")
	assert.Equal(t, bench.StatusDropped, changes[0].Status)
	_, drops = bench.Compare([]bench.Ratio{{Name: "y", Value: 1}}, ungated, 0.15, true)
	assert.Equal(t, 1, drops, "unless every ratio gates")
	changes, _ = bench.Compare(nil, small, 0.15, false)
	assert.Equal(t, bench.StatusNew, changes[0].Status)
	assert.True(t, math.IsNaN(changes[0].Delta()))
	changes, _ = bench.Compare(small, nil, 0.15, false)
	assert.Equal(t, bench.StatusMissing, changes[0].Status)
}

func TestRatiosLeaveOutNonFigures(t *testing.T) {
	var rs bench.Ratios
	rs.Add("b", 2, true)
	rs.Add("nan", math.NaN(), true)
	rs.Add("inf", math.Inf(1), false)
	rs.Add("zero", 0, false)
	rs.Add("a", 0.5, false)
	assert.Equal(t, []bench.Ratio{{Name: "a", Value: 0.5}, {Name: "b", Value: 2, Gate: true}}, rs.Sorted())
}

type rep struct {
	v   float64
	err string
}

func (r rep) Failure() string { return r.err }

func TestCell(t *testing.T) {
	c := &bench.Cell[rep]{Target: "segment", Reps: []rep{{v: 3}, {v: math.NaN(), err: "start: no binary"}, {v: 1}}}
	v := func(r rep) float64 { return r.v }
	assert.Equal(t, bench.Spread{Median: 2, Min: 1, Max: 3, N: 2}, c.Spread(v))
	assert.Equal(t, []string{"rep 2: start: no binary"}, c.Errors())
	var none *bench.Cell[rep]
	assert.True(t, math.IsNaN(none.Spread(v).Median), "a cell that did not run has no figure")
}

func TestSpreadText(t *testing.T) {
	assert.Equal(t, "–", bench.SpreadText(bench.SpreadOf(nil), bench.Rate))
	assert.Equal(t, "5", bench.SpreadText(bench.SpreadOf([]float64{5}), bench.Rate))
	assert.Equal(t, "2 [1–3]", bench.SpreadText(bench.SpreadOf([]float64{1, 2, 3}), bench.Rate))
}

func TestJudge(t *testing.T) {
	c := bench.Judge("segment vs raw", 1.05, "×", true, 0.95)
	assert.Equal(t, bench.Pass, c.Verdict)
	assert.Equal(t, "PASS segment vs raw: 1.05× (target ≥ 0.95×)", c.String())
	c = bench.Judge("p99", 0.012, "s", false, 0.010)
	assert.Equal(t, bench.Fail, c.Verdict)
	assert.Equal(t, "≤ 10 ms", c.Goal())
	c = bench.Judge("rss", math.NaN(), "B", false, 256<<20).Because("segment did not run")
	assert.Equal(t, bench.Missing, c.Verdict)
	assert.Equal(t, "–", c.Measured())
	assert.Equal(t, "MISSING rss: – (target ≤ 256.0 MiB): segment did not run", c.String())
}

func TestFactsBusy(t *testing.T) {
	f := bench.Facts{Machine: bench.MachineInfo{CPUs: 2, LoadAvg: "1.50 1.0 1.0 1/80 1"}, LoadAfter: "3.25 2 2 1/80 2"}
	assert.Equal(t, 3.25, f.Load())
	assert.Contains(t, f.Busy(), "up to 3.2 on 2 CPUs")
	assert.Equal(t, "2 cores", f.Cores())
	f.LoadAfter = "0.5 0 0"
	assert.Empty(t, f.Busy(), "load below the CPU count")
	assert.Contains(t, f.List()[2], "command: ``")
}
