package logbench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
}

const payload = 1_000_000

func subject(name string, f figures) *logbench.SubjectResult {
	lat := &bench.Summary{Count: 1, P99: f.p99}
	return &logbench.SubjectResult{Name: name, Durable: true, Samples: []logbench.Sample{
		{Workload: "append-256", Records: int64(f.append256), PayloadBytes: int64(f.append256) * 1024, Seconds: 1, Latency: lat},
		{Workload: "ingest", Records: int64(f.ingest), PayloadBytes: payload, Seconds: 1,
			Device: &bench.DiskStats{WrittenBytes: f.written}, Usage: &bench.Usage{Allocated: f.allocated}},
		{Workload: "read", Records: int64(f.read), PayloadBytes: payload, Seconds: 1},
		{Workload: "reopen", Records: 1, Seconds: f.reopen.Seconds()},
	}}
}

func verdicts(ts []logbench.TargetResult) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Verdict())
	}
	return out
}

func TestEvaluateTargets(t *testing.T) {
	raw := figures{append256: 100_000, ingest: 800_000, read: 5_000_000}
	pebble := figures{append256: 60_000, ingest: 600_000, read: 2_000_000}
	good := figures{append256: 96_000, p99: 8 * time.Millisecond, ingest: 760_000, written: 1_100_000,
		allocated: 1_050_000, read: 4_600_000, reopen: 2 * time.Millisecond}
	bad := figures{append256: 80_000, p99: 12 * time.Millisecond, ingest: 700_000, written: 1_300_000,
		allocated: 1_200_000, read: 4_000_000, reopen: 6 * time.Millisecond}
	cases := []struct {
		name     string
		subjects []*logbench.SubjectResult
		want     []string
	}{
		{"all met", []*logbench.SubjectResult{subject("raw", raw), subject("segment", good), subject("pebble", pebble)},
			[]string{"PASS", "PASS", "PASS", "PASS", "PASS", "PASS", "PASS", "PASS"}},
		{"all missed", []*logbench.SubjectResult{subject("raw", raw), subject("segment", bad), subject("pebble", pebble)},
			[]string{"FAIL", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL"}},
		{"no pebble", []*logbench.SubjectResult{subject("raw", raw), subject("segment", good)},
			[]string{"PASS", "SKIP", "PASS", "PASS", "PASS", "PASS", "PASS", "PASS"}},
		{"no segment", []*logbench.SubjectResult{subject("raw", raw), subject("pebble", pebble)},
			[]string{"SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := logbench.Evaluate(&logbench.Results{Subjects: c.subjects})
			assert.Equal(t, c.want, verdicts(ts))
			for _, tr := range ts {
				assert.NotEmpty(t, tr.String())
			}
		})
	}
}

func TestEvaluateWithoutDeviceCounters(t *testing.T) {
	seg := subject("segment", figures{append256: 1, ingest: 1, read: 1})
	for i := range seg.Samples {
		seg.Samples[i].Device = nil
	}
	ts := logbench.Evaluate(&logbench.Results{Subjects: []*logbench.SubjectResult{seg}})
	assert.Equal(t, "SKIP", ts[4].Verdict(), "write amplification needs the device counters: %s", ts[4])
	assert.Zero(t, ts[4].Value, "no NaN in the JSON")
}

func TestEvaluateIgnoresFailedRepetitions(t *testing.T) {
	seg := subject("segment", figures{append256: 100, ingest: 100, read: 100})
	for i := range seg.Samples {
		seg.Samples[i].Err = "boom"
	}
	ts := logbench.Evaluate(&logbench.Results{Subjects: []*logbench.SubjectResult{seg, subject("raw", figures{append256: 1})}})
	for _, tr := range ts {
		assert.Equal(t, "SKIP", tr.Verdict(), tr.String())
		assert.Contains(t, tr.Missing, "no successful")
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
			r := &logbench.Results{Machine: bench.MachineInfo{CPUs: 2, LoadAvg: c.before}, LoadAfter: c.after}
			md := string(logbench.Report(r).Markdown())
			assert.Equal(t, c.warn, strings.Contains(md, "The machine was busy"))
		})
	}
}
