package replbench

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// sample has segment within every target, pebble below the throughput
// ratio by less than its noise, spending 3x the CPU per record at RF 3,
// flushing twice as often as segment and losing a record, and badger
// whose cluster never started.
func sample() *Result {
	r := &Result{}
	r.Config.Engines, r.Config.Sync, r.Config.Reps, r.Config.Kills, r.Config.Stops = []string{"segment", "pebble", "badger"}, "always", 3, 10, 5
	r.Config.RecordBytes, r.Config.Partitions, r.Config.RunSeconds, r.Config.FaultRate, r.Config.CatchUpBytes = 1024, 8, 8, 2000, 1<<30
	for i := range 3 {
		f := float64(i)
		r.add("segment", ProduceRF1, Rep{RecordsPerSec: 100e3 + f, BytesPerSec: 100e6, P99: 0.1, Records: 1e6, Batches: 1e4, CPUSeconds: 10, Flushes: 1e4})
		r.add("segment", ProduceRF3, Rep{RecordsPerSec: 70e3 + f, BytesPerSec: 70e6, P99: 0.2, Records: 1e6, Batches: 1e4, CPUSeconds: 20, Flushes: 3e4})
		r.add("pebble", ProduceRF1, Rep{RecordsPerSec: 100e3 * (1 + f/2), Records: 1e6, Batches: 1e4, CPUSeconds: 10, Flushes: 1e4})
		r.add("pebble", ProduceRF3, Rep{RecordsPerSec: 60e3, Records: 1e6, Batches: 1e4, CPUSeconds: 30, Flushes: 6e4})
		r.add("segment", Ingest, Rep{BytesPerSec: 200e6, Seconds: 0.5})
		r.add("pebble", Ingest, Rep{BytesPerSec: 100e6, Seconds: 1})
	}
	r.add("segment", LatencyRF3, Rep{Rate: 30e3, P50: 0.002, P99: 0.008, P999: 0.02, Max: 0.05})
	r.add("segment", LatencyRF1, Rep{Rate: 30e3, P50: 0.001, P99: 0.004, Max: 0.01})
	r.add("segment", LatencyLower, Rep{Rate: 15e3, P50: 0.001, P99: 0.003, P999: 0.004, Max: 0.005})
	r.add("pebble", LatencyRF3, Rep{Rate: 30e3, P99: 0.5})
	for i := range 10 {
		tl := make([]int, 80)
		tl[3] = 5
		r.add("segment", KillLeader, Rep{Seconds: 0.3 + float64(i)/100, Node: 1, Leader: 2, Controller: i%3 == 0, Timeline: tl})
		r.add("pebble", KillLeader, Rep{Seconds: 0.9 + float64(i)/100, Node: 1, Leader: 2})
	}
	for range 5 {
		r.add("segment", StopLeader, Rep{Seconds: 0.05, Shutdown: 0.3, Quiet: 0.02, Node: 1})
		r.add("pebble", StopLeader, Rep{Seconds: 0.5, Shutdown: 0.3, Quiet: 0.02, Node: 1})
	}
	r.add("segment", Audit, Rep{Acked: 1000, Consumed: 1000})
	r.add("pebble", Audit, Rep{Acked: 1000, Consumed: 999, Lost: 1})
	r.add("segment", CatchUp, Rep{Bytes: 1 << 30, Seconds: 8, Node: 2, Listed: 0.5})
	r.add("pebble", CatchUp, Rep{Bytes: 1 << 30, Seconds: 100, Node: 2, Listed: 0.5})
	for _, w := range []string{ProduceRF3, KillLeader, StopLeader, CatchUp} {
		r.add("badger", w, Rep{Error: "start the cluster: boom"})
	}
	r.Checks = r.Judge()
	return r
}

func TestJudge(t *testing.T) {
	got := map[string][]string{}
	for _, c := range sample().Checks {
		e := c.Name[strings.LastIndex(c.Name, " ")+1:]
		got[e] = append(got[e], c.Verdict)
	}
	// throughput, CPU, flushes (not segment's), latency, kill median, kill
	// max, lost, duplicated, stall, catch-up
	p, f, u, m := bench.Pass, bench.Fail, bench.Unresolved, bench.Missing
	assert.Equal(t, []string{p, p, p, p, p, p, p, p, p}, got["segment"])
	assert.Equal(t, []string{u, f, f, f, p, p, f, p, f, f}, got["pebble"], "the RF 1 runs differ by 100 %%: 0.4x is within that of 0.6x")
	assert.Equal(t, []string{m, m, m, m, m, m, m, m, m, m}, got["badger"])
}

func TestReportAndLoad(t *testing.T) {
	r := sample()
	dir := t.TempDir()
	require.NoError(t, r.Write(dir))
	md := string(r.Report(ChartFile))
	for _, want := range []string{"## Targets", "## Throughput: RF 3 against one broker at RF 1", "## acks=all latency at half the peak",
		"## kill -9 of a leader under load", "## SIGTERM of a leader under load", "## Nothing acknowledged lost", "## A follower catching up",
		"| segment | 1000 | 1000 | 0 | 0 | 0 | 0 |", "| segment | 1/5 | 15k | 1 ms | 3 ms | 4 ms | 5 ms |", "| pebble | 1.00 | 6.00 | 2.00× | 10.0 µs | 30.0 µs | 3.00× |", "badger, kill-leader, rep 1: start the cluster: boom", "sync=always"} {
		assert.Contains(t, md, want)
	}
	assert.FileExists(t, filepath.Join(dir, ChartFile))
	again, err := Load(filepath.Join(dir, ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, md, string(again.Report(ChartFile)))
	gates := map[string]bool{}
	for _, x := range again.Ratios() {
		gates[x.Name] = x.Gate
	}
	assert.True(t, gates["produce RF 3 / RF 1, segment"])
	assert.False(t, gates["produce RF 3 / RF 1, pebble"])
	assert.Contains(t, gates, "catch-up / bulk ingest, pebble")
}

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int, p int32) load.Write {
		return load.Write{At: t0.Add(time.Duration(ms) * time.Millisecond), Partition: p, Records: 1}
	}
	ws := []load.Write{at(0, 0), at(10, 1), at(20, 0), at(300, 0), at(310, 1), at(320, 0), at(330, 1)}
	from, to := t0.Add(100*time.Millisecond), t0.Add(340*time.Millisecond)
	assert.Equal(t, 300*time.Millisecond, load.LongestGap(ws, nil, from, to), "partition 1 from 10 to 310: the gap straddling the window counts whole")
	assert.Equal(t, 280*time.Millisecond, load.LongestGap(ws, map[int32]bool{0: true}, from, to))
	assert.Equal(t, int32(1), load.WidestGap(ws, nil, from, to).Partition, "the widest gap says where it was")
	assert.Equal(t, 340*time.Millisecond, load.LongestGap(ws[:2], nil, from, to), "a stall not over yet runs from the last acknowledgement to the window's end")
	tl := timeline(ws, 0, t0.Add(TimelineFrom))
	assert.Equal(t, 2, tl[0], "records at 0 and 20 ms fall in the first bin")
}
