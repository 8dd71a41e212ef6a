package groupbench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
)

// sample has segment within every target, pebble over the churn bound
// with noisy load runs, and badger whose broker never started.
func sample() *Result {
	r := &Result{Engines: []string{"segment", "pebble", "badger"}}
	r.Config.LoadGroups, r.Config.Runs = 100, 2
	r.add("segment", ChurnCooperative, Rep{Moved: 3, SettleMillis: 1000, Before: "[0 1] [2 3]", After: "[0] [1] [2 3]"})
	r.add("segment", Settle, Rep{SettleMillis: 250})
	r.add("segment", Settle, Rep{SettleMillis: 260})
	r.add("segment", LoadPairs, Rep{Baseline: 100, WithGroups: 99})
	r.add("segment", LoadPairs, Rep{Baseline: 102, WithGroups: 101})
	r.add("pebble", ChurnCooperative, Rep{Moved: 5, SettleMillis: 1000})
	r.add("pebble", Settle, Rep{SettleMillis: 1500})
	r.add("pebble", LoadPairs, Rep{Baseline: 100, WithGroups: 90})
	r.add("pebble", LoadPairs, Rep{Baseline: 130, WithGroups: 120})
	r.add("badger", ChurnCooperative, Rep{Error: "start: boom"})
	r.Checks = r.Judge()
	return r
}

func TestJudge(t *testing.T) {
	got := map[string]string{}
	for _, c := range sample().Checks {
		got[c.Name[strings.LastIndex(c.Name, ", ")+2:]+": "+strings.Fields(c.Name)[0]] += c.Verdict
	}
	assert.Equal(t, map[string]string{
		"segment: partitions": bench.Pass, "segment: slowest": bench.Pass, "segment: produce": bench.Pass,
		"pebble: partitions": bench.Fail, "pebble: slowest": bench.Fail, "pebble: produce": bench.Unresolved,
		"badger: partitions": bench.Missing, "badger: slowest": bench.Missing,
	}, got)
}

func TestReportAndLoad(t *testing.T) {
	r := sample()
	md := string(r.Report())
	for _, want := range []string{"## Results", "## Produce throughput with group traffic", "## Targets", "badger, churn-cooperative-sticky, rep 1: start: boom",
		"Before: [0 1] [2 3]", "| segment | 3 | 1 s |"} {
		assert.Contains(t, md, want)
	}
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	again, err := Load(filepath.Join(dir, ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, md, string(again.Report()))
	ratios := again.Ratios()
	require.Len(t, ratios, 2, "badger has no load pairs")
	assert.False(t, ratios[0].Gate)
}

func TestParseReadsCmdGroupbenchFiles(t *testing.T) {
	old := `[{"engine":"segment","churn_cooperative_sticky":{"moved":3,"settle_ms":1000,"before":"b","after":"a"},
		"churn_range":{"moved":6,"settle_ms":3000},"settle_ms":[252,253],
		"load":{"groups":100,"run_seconds":15,"record_bytes":100,"baseline_records_per_s":[100,110],
			"with_groups_records_per_s":[99,110],"group_requests_per_s":[50,51]}}]`
	r, err := Parse([]byte(old))
	require.NoError(t, err)
	assert.Equal(t, []string{"segment"}, r.Engines)
	assert.Equal(t, 3.0, r.Cell("segment", ChurnCooperative).Median(Moved))
	assert.Equal(t, 252.5, r.Cell("segment", Settle).Median(SettleMillis))
	assert.InDelta(t, -0.5, r.Cell("segment", LoadPairs).Median(Change), 1e-9)
	assert.Len(t, r.Checks, 3)
	_, err = Parse([]byte("{"))
	assert.Error(t, err)
}
