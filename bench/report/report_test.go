package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/matrix"
)

// rep makes a finished repetition with the given rate and counters.
func rep(rate float64, fsyncs, batches int64) matrix.Rep {
	return matrix.Rep{
		Produce: load.ProduceResult{Records: int64(rate), Bytes: int64(rate) * 1024, Elapsed: 1, RecordsPerSec: rate, MBPerSec: rate * 1024 / 1e6,
			Latency: bench.Summary{Count: 10, P50: time.Millisecond, P99: 5 * time.Millisecond, P999: 9 * time.Millisecond, Max: 12 * time.Millisecond}},
		Batches: batches, Fsyncs: fsyncs, CommitWaiters: 2, ProcWritten: int64(rate) * 1100, CPUSeconds: 0.5, PeakRSS: 50 << 20,
		Device:     bench.DiskStats{WrittenBytes: int64(rate) * 1200, FlushOps: fsyncs},
		LogPayload: int64(rate) * 1024, Disk: bench.Usage{Allocated: int64(rate) * 1050, Files: 3},
		CatchUp: &load.ConsumeResult{Records: 100, RecordsPerSec: rate * 2, MBPerSec: rate * 2048 / 1e6},
	}
}

// sampleRun has segment and pebble as engines, memory as the reference
// line, kfake as a peer; the concurrency sweep 1 and 256; pebble failed
// every repetition at 1 in flight; badger never started.
func sampleRun() *matrix.Run {
	lo, hi := matrix.Reference, matrix.Reference
	lo.InFlight = 1
	many := matrix.Reference
	many.Producers = 16
	r := &matrix.Run{
		Name: "sample", Profile: matrix.Profiles["quick"],
		Facts: bench.Facts{Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Duration: 100,
			Machine: bench.MachineInfo{CPUs: 2, LoadAvg: "5.0 4.0 3.0 1/100 1"}, LoadAfter: "1.0 1.0 1.0 1/100 2",
			Commit: strings.Repeat("a", 40), Command: "go run ./cmd/bench -profile quick"},
		Targets: []matrix.TargetInfo{
			{Name: "segment", Kind: matrix.KindEngine, Durable: true, Note: "seg"},
			{Name: "pebble", Kind: matrix.KindEngine, Durable: true, Note: "peb"},
			{Name: "badger", Kind: matrix.KindEngine, Durable: true, Note: "bad"},
			{Name: "memory", Kind: matrix.KindReference, Note: "mem"},
			{Name: "kfake", Kind: matrix.KindPeer, Note: "kf"},
		},
		Points: []matrix.Point{
			{Workload: lo, Slices: []string{matrix.SliceConcurrency}},
			{Workload: hi, Slices: []string{matrix.SliceConcurrency, matrix.SliceSize}, Consume: true},
			{Workload: many, Slices: []string{matrix.SliceProducers}},
		},
		Recoveries: []*matrix.Recovery{
			{Target: "segment", Sync: "always", Bytes: 1 << 20, Records: 64, Warm: 0.2, Cold: 0.3, Disk: bench.Usage{Allocated: 1100000, Files: 4}},
			{Target: "segment", Sync: "interval", Bytes: 1 << 20, Records: 64, Lost: 5, Warm: 0.2, Cold: 0.3},
			{Target: "pebble", Sync: "always", Error: "restart after kill -9: boom"},
		},
	}
	add := func(target, kind string, w matrix.Workload, reps ...matrix.Rep) {
		r.Cells = append(r.Cells, &matrix.Cell{Cell: bench.Cell[matrix.Rep]{Target: target, Reps: reps}, Kind: kind, Workload: w})
	}
	add("segment", matrix.KindEngine, lo, rep(1000, 1000, 1000), rep(1200, 1200, 1200))
	add("segment", matrix.KindEngine, hi, rep(100000, 400, 400), rep(110000, 420, 420))
	add("segment", matrix.KindEngine, many, rep(20000, 2000, 20000))
	add("pebble", matrix.KindEngine, lo, matrix.Rep{Error: "produce: the server process exited"})
	add("pebble", matrix.KindEngine, hi, rep(50000, 600, 400))
	add("badger", matrix.KindEngine, lo, matrix.Rep{Error: `start: unknown engine "badger"`})
	add("badger", matrix.KindEngine, hi)
	mem := rep(200000, -1, 800)
	mem.Disk = bench.Usage{}
	add("memory", matrix.KindReference, hi, mem)
	kf := rep(250000, -1, 800)
	kf.Fsyncs, kf.Disk = -1, bench.Usage{}
	add("kfake", matrix.KindPeer, lo, kf)
	add("kfake", matrix.KindPeer, hi, kf)
	return r
}

func TestMarkdown(t *testing.T) {
	run := sampleRun()
	md := string(Result(run).Markdown())
	for _, want := range []string{
		"# Engine comparison: sample (quick profile)",
		"## 1KiB records, 256 in flight, acks=all, sync=always\n",
		"## 1KiB records, 256 in flight, acks=all, sync=always: group commit, amplification, CPU and memory",
		"## 1KiB records, 256 in flight, acks=all, sync=always: tail and catch-up reads",
		"## Recovery after kill -9, sync=interval", "## Failed measurements", "## Setup",
		"](sample-concurrency.png)",              // after the concurrency sweep's last table
		"| segment | 105k [100k–110k] | 0.42× |", // the median with its range, and × kfake
		"| pebble | 50k | 0.20× | – | 0.48× |",   // × segment
		`start: unknown engine "badger"`,         // the reason, in the failures
		"recovery-always on pebble, rep 1: restart after kill -9: boom",
		"| segment | 5 | 64 |",           // lost, acked under sync=interval
		"The machine was busy",           // load 5.0 on 2 CPUs
		"| segment | 1 | 0.1 | 10 | 2 |", // 16 producers: the broker's group commit
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "seed project", "the seed's claim is not this project's")
	assert.NotContains(t, md, "NaN")
	assert.NotContains(t, md, "%!")
}

func TestWriteAndIndex(t *testing.T) {
	results := t.TempDir()
	run := sampleRun()
	dir := filepath.Join(results, "2026-11-30-quick")
	require.NoError(t, Write(run, dir))
	for _, f := range []string{ReportFile, ResultsFile, "sample-concurrency.png"} {
		info, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	single := sampleRun()
	single.Cells = single.Cells[:1] // one target, one point: one value on the log axis
	require.NoError(t, Result(single).WriteCharts(t.TempDir()))

	empty := sampleRun()
	empty.Cells = nil
	none := t.TempDir()
	require.NoError(t, Result(empty).WriteCharts(none))
	files, err := os.ReadDir(none)
	require.NoError(t, err)
	assert.Empty(t, files, "no figure, no chart")

	back, err := Load(filepath.Join(dir, ResultsFile))
	require.NoError(t, err)
	assert.Equal(t, run.Cells[1].Reps[0].Produce.RecordsPerSec, back.Cells[1].Reps[0].Produce.RecordsPerSec)
	assert.Equal(t, Ratios(run), Ratios(back), "ratios survive the JSON round trip")

	older := sampleRun()
	older.Name, older.Started = "older", older.Started.Add(-time.Hour)
	older.Profile.Name = "full"
	require.NoError(t, Write(older, filepath.Join(results, "older")))
	require.NoError(t, os.MkdirAll(filepath.Join(results, "broken"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(results, "broken", ResultsFile), []byte("{"), 0o644))

	require.NoError(t, WriteIndex(results))
	idx, err := os.ReadFile(filepath.Join(results, IndexFile))
	require.NoError(t, err)
	s := string(idx)
	assert.Less(t, strings.Index(s, "[sample]"), strings.Index(s, "[older]"), "newest first")
	assert.Contains(t, s, "broken: ")
}

func TestRatiosAndCompare(t *testing.T) {
	base := Ratios(sampleRun())
	names := map[string]float64{}
	for _, r := range base {
		names[r.Name] = r.Value
	}
	key := matrix.Reference.Key()
	assert.InDelta(t, 105000.0/250000, names["broker/kfake records/s: segment @ "+key], 1e-9)
	assert.InDelta(t, 2.1, names["engine/engine records/s: segment/pebble @ "+key], 1e-9)
	for n := range names {
		assert.NotContains(t, n, "badger", "no figure, no ratio")
	}

	worse := sampleRun()
	worse.Cells[1].Reps = []matrix.Rep{rep(60000, 400, 400)} // segment at 256: 105k -> 60k
	changes, drops := bench.Compare(base, Ratios(worse), 0.15, false)
	assert.Positive(t, drops)
	status := map[string]string{}
	for _, c := range changes {
		status[c.Name] = c.Status
	}
	assert.Equal(t, bench.StatusDrop, status["engine/engine records/s: segment/pebble @ "+key])
	assert.Equal(t, bench.StatusOK, status["broker/kfake records/s: segment @ 1KiB-1-acks=all-sync=always"])
	for _, r := range base {
		want := (strings.Contains(r.Name, key) && !strings.Contains(r.Name, "nats"))
		assert.Equal(t, want, r.Gate, r.Name)
	}

	_, drops = bench.Compare(base, base, 0.15, false)
	assert.Zero(t, drops)
}

func TestShortCommit(t *testing.T) {
	c := strings.Repeat("b", 40)
	assert.Equal(t, "bbbbbbbbbbbb", shortCommit(c))
	assert.Equal(t, "bbbbbbbbbbbb (dirty)", shortCommit(c+" (dirty)"))
	assert.Equal(t, "unknown", shortCommit("unknown"))
}
