package logbench

import (
	"fmt"
	"math"
)

// TargetResult is one of the targets checked against a run.
type TargetResult struct {
	Name string `json:"name"`
	// Value is the measured figure (median over repetitions); when it could
	// not be computed it is 0 and Missing says why.
	Value   float64 `json:"value"`
	Bound   float64 `json:"bound"`
	AtLeast bool    `json:"at_least"`
	Unit    string  `json:"unit"`
	Pass    bool    `json:"pass"`
	Missing string  `json:"missing,omitempty"`
}

// Verdict is PASS, FAIL or SKIP.
func (t TargetResult) Verdict() string {
	switch {
	case t.Missing != "":
		return "SKIP"
	case t.Pass:
		return "PASS"
	}
	return "FAIL"
}

func (t TargetResult) String() string {
	op := "≤"
	if t.AtLeast {
		op = "≥"
	}
	if t.Missing != "" {
		return fmt.Sprintf("%s %s (target %s %s): %s", t.Verdict(), t.Name, op, t.fmt(t.Bound), t.Missing)
	}
	return fmt.Sprintf("%s %s: %s (target %s %s)", t.Verdict(), t.Name, t.fmt(t.Value), op, t.fmt(t.Bound))
}

func (t TargetResult) fmt(v float64) string {
	if t.Unit == "ms" {
		return fmt.Sprintf("%.3g ms", v*1e3)
	}
	return fmt.Sprintf("%.2f×", v)
}

// Segment is the engine the targets are about.
const Segment = "segment"

// Evaluate checks the targets for the segment engine against the
// same run's raw baseline and pebble.
func Evaluate(r *Results) []TargetResult {
	seg, raw, peb := r.Subject(Segment), r.Subject(RawName), r.Subject("pebble")
	a256 := AppendWorkload(256)
	ratio := func(name, workload string, other *SubjectResult, otherName string, bound float64) TargetResult {
		t := TargetResult{Name: name, Bound: bound, AtLeast: true, Unit: "×"}
		return t.set(seg.Median(workload, RecordsPerSecond)/other.Median(workload, RecordsPerSecond),
			missing(seg, Segment, workload), missing(other, otherName, workload))
	}
	abs := func(name, workload string, m Metric, bound float64, unit string) TargetResult {
		t := TargetResult{Name: name, Bound: bound, Unit: unit}
		return t.set(seg.Median(workload, m), missing(seg, Segment, workload))
	}
	return []TargetResult{
		ratio("segment durable append, 256 writers, vs raw", a256, raw, RawName, 0.95),
		ratio("segment durable append, 256 writers, vs pebble", a256, peb, "pebble", 1.5),
		abs("segment durable append, 256 writers, p99 latency", a256, P99, 0.010, "ms"),
		ratio("segment bulk ingest vs raw", WorkloadIngest, raw, RawName, 0.9),
		abs("segment bulk ingest write amplification", WorkloadIngest, WriteAmplification, 1.2, "×"),
		abs("segment bulk ingest space amplification", WorkloadIngest, SpaceAmplification, 1.1, "×"),
		ratio("segment cold sequential read vs raw scan", WorkloadRead, raw, RawName, 0.9),
		abs("segment reopen to first read (cold page cache)", WorkloadReopen, Duration, 0.005, "ms"),
	}
}

// set records v and its verdict, or the first non-empty reason it is missing.
func (t TargetResult) set(v float64, reasons ...string) TargetResult {
	t.Value = v
	for _, r := range reasons {
		if r != "" {
			t.Missing, t.Value = r, 0
			return t
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		t.Missing, t.Value = "figure not available (device counters missing?)", 0
		return t
	}
	if t.AtLeast {
		t.Pass = v >= t.Bound
	} else {
		t.Pass = v <= t.Bound
	}
	return t
}

func missing(sr *SubjectResult, name, workload string) string {
	if sr == nil {
		return name + " was not run"
	}
	if !sr.Spread(workload, Duration).OK() {
		return fmt.Sprintf("%s has no successful %s sample", name, workload)
	}
	return ""
}
