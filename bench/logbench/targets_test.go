package logbench_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"
)

// figures is one subject's medians for a synthetic run.
type figures struct {
	append256 float64 // records/s
	p99       time.Duration
	ingest    float64 // records/s
	written   int64   // device bytes during ingest
	allocated int64
	read      float64 // records/s
	reopen    time.Duration
	kill      time.Duration // restart after kill -9, warm
	killCold  time.Duration
}

const payload = 1_000_000

// subject is one subject's samples, a cell per workload.
type subject struct {
	name    string
	samples []logbench.Sample
}

func subjectOf(name string, f figures) subject {
	lat := &bench.Summary{Count: 1, P99: f.p99}
	var kills []logbench.Sample
	if f.kill > 0 {
		kills = []logbench.Sample{
			{Workload: "kill-restart", Records: 1, Seconds: f.kill.Seconds()},
			{Workload: "kill-restart-cold", Records: 1, Seconds: f.killCold.Seconds()},
		}
	}
	return subject{name, append([]logbench.Sample{
		{Workload: "append-256", Records: int64(f.append256), PayloadBytes: int64(f.append256) * 1024, Seconds: 1, Latency: lat},
		{Workload: "ingest", Records: int64(f.ingest), PayloadBytes: payload, Seconds: 1,
			Device: &bench.DiskStats{WrittenBytes: f.written}, Usage: &bench.Usage{Allocated: f.allocated}},
		{Workload: "read", Records: int64(f.read), PayloadBytes: payload, Seconds: 1},
		{Workload: "reopen", Records: 1, Seconds: f.reopen.Seconds()},
	}, kills...)}
}

func results(subjects ...subject) *logbench.Results {
	r := &logbench.Results{}
	for _, s := range subjects {
		r.Subjects = append(r.Subjects, logbench.SubjectInfo{Name: s.name, Durable: true})
		for _, smp := range s.samples {
			r.Cells = append(r.Cells, &logbench.Cell{Target: s.name, Reps: []logbench.Sample{smp}, Workload: smp.Workload})
		}
	}
	return r
}

func verdicts(ts []bench.Check) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Verdict)
	}
	return out
}

func TestEvaluateTargets(t *testing.T) {
	raw := figures{append256: 100_000, ingest: 800_000, read: 5_000_000}
	ceiling := figures{append256: 105_000, ingest: 820_000}
	pebble := figures{append256: 60_000, ingest: 600_000, read: 2_000_000, kill: 300 * time.Millisecond, killCold: 400 * time.Millisecond}
	badger := figures{append256: 30_000, ingest: 300_000, read: 4_000_000, kill: 200 * time.Millisecond, killCold: 250 * time.Millisecond}
	good := figures{append256: 96_000, p99: 1500 * time.Microsecond, ingest: 760_000, written: 1_050_000,
		allocated: 1_050_000, read: 4_600_000, reopen: 2 * time.Millisecond, kill: 50 * time.Millisecond, killCold: 80 * time.Millisecond}
	bad := figures{append256: 80_000, p99: 12 * time.Millisecond, ingest: 700_000, written: 1_300_000,
		allocated: 1_200_000, read: 3_000_000, reopen: 6 * time.Millisecond, kill: 500 * time.Millisecond, killCold: 600 * time.Millisecond}
	all := func(v string) []string { return slices.Repeat([]string{v}, 17) }
	cases := []struct {
		name     string
		subjects []subject
		want     []string
	}{
		{"all met", []subject{subjectOf("raw", raw), subjectOf("raw-overwrite", ceiling), subjectOf("segment", good),
			subjectOf("pebble", pebble), subjectOf("badger", badger)}, all("PASS")},
		{"all missed", []subject{subjectOf("raw", raw), subjectOf("raw-overwrite", ceiling), subjectOf("segment", bad),
			subjectOf("pebble", pebble), subjectOf("badger", badger)}, all("FAIL")},
		// The targets against pebble, and every target of segment, need
		// them in the run.
		{"no pebble", []subject{subjectOf("raw", raw), subjectOf("raw-overwrite", ceiling), subjectOf("segment", good),
			subjectOf("badger", badger)}, slices.Repeat([]string{"PASS"}, 14)},
		{"no segment", []subject{subjectOf("raw", raw), subjectOf("pebble", pebble)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := results(c.subjects...).Result().Checks
			assert.Equal(t, c.want, verdicts(ts))
			for _, tr := range ts {
				assert.NotEmpty(t, tr.String())
			}
		})
	}
}

func TestEvaluateWithoutDeviceCounters(t *testing.T) {
	seg := subjectOf("segment", figures{append256: 1, ingest: 1, read: 1})
	for i := range seg.samples {
		seg.samples[i].Device = nil
	}
	ts := results(seg).Result().Checks
	i := slices.IndexFunc(ts, func(c bench.Check) bool { return strings.Contains(c.Name, "write amplification") })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, bench.Missing, ts[i].Verdict, "write amplification needs the device counters: %s", ts[i])
	assert.Contains(t, ts[i].Note, "no figure")
	assert.Zero(t, ts[i].Value, "no NaN in the JSON")
}

func TestEvaluateIgnoresFailedRepetitions(t *testing.T) {
	seg := subjectOf("segment", figures{append256: 100, ingest: 100, read: 100})
	for i := range seg.samples {
		seg.samples[i].Err = "boom"
	}
	ts := results(seg, subjectOf("raw", figures{append256: 1})).Result().Checks
	require.NotEmpty(t, ts)
	for _, tr := range ts {
		assert.Equal(t, bench.Missing, tr.Verdict, tr.String())
		assert.Contains(t, tr.Note, "boom")
	}
}

func TestReportWarnsWhenBusy(t *testing.T) {
	cases := []struct {
		before, after string
		warn          bool
	}{
		{"0.20 0.1 0.1 1/100 5", "0.90 0.3 0.1 1/100 6", false},
		{"0.20 0.1 0.1 1/100 5", "3.50 1.0 0.5 1/100 6", true},
		{"", "", false},
	}
	for _, c := range cases {
		t.Run(c.before+"→"+c.after, func(t *testing.T) {
			r := &logbench.Results{Facts: bench.Facts{Machine: bench.MachineInfo{CPUs: 2, LoadAvg: c.before}, LoadAfter: c.after}}
			md := string(r.Result().Markdown())
			assert.Equal(t, c.warn, strings.Contains(md, "The machine was busy"))
		})
	}
}
