package logbench

import (
	"fmt"
	"strings"

	"github.com/minikafka/minikafka/bench"
)

// Segment is the engine the targets are about.
const Segment = "segment"

// Judge checks the targets for the segment engine against the same run's
// raw baseline and pebble.
func Judge(r *Results) []bench.Check {
	a256 := AppendWorkload(256)
	ratio := func(name, workload, other string, bound float64) bench.Check {
		c := bench.Judge(name, r.Median(Segment, workload, RecordsPerSecond)/r.Median(other, workload, RecordsPerSecond), "×", true, bound)
		return missing(r, c, workload, Segment, other)
	}
	abs := func(name, workload string, m Metric, bound float64, unit string) bench.Check {
		return missing(r, bench.Judge(name, r.Median(Segment, workload, m), unit, false, bound), workload, Segment)
	}
	return []bench.Check{
		ratio("segment durable append, 256 writers, vs raw", a256, RawName, 0.95),
		ratio("segment durable append, 256 writers, vs pebble", a256, "pebble", 1.5),
		abs("segment durable append, 256 writers, p99 latency", a256, P99, 0.010, "s"),
		ratio("segment bulk ingest vs raw", WorkloadIngest, RawName, 0.9),
		abs("segment bulk ingest write amplification", WorkloadIngest, WriteAmplification, 1.2, "×"),
		abs("segment bulk ingest space amplification", WorkloadIngest, SpaceAmplification, 1.1, "×"),
		ratio("segment cold sequential read vs raw scan", WorkloadRead, RawName, 0.9),
		abs("segment reopen to first read (cold page cache)", WorkloadReopen, Duration, 0.005, "s"),
	}
}

// missing turns c Missing, with the first reason, when a subject it needs
// has no successful sample of workload; a figure missing for another
// reason says so.
func missing(r *Results, c bench.Check, workload string, subjects ...string) bench.Check {
	for _, s := range subjects {
		switch {
		case r.Subject(s) == nil:
			c.Verdict, c.Value, c.Note = bench.Missing, 0, s+" was not run"
			return c
		case !r.Spread(s, workload, Duration).OK():
			c.Verdict, c.Value, c.Note = bench.Missing, 0, fmt.Sprintf("%s has no successful %s sample", s, workload)
			return c
		}
	}
	if c.Verdict == bench.Missing {
		c.Note = "figure not available (device counters missing?)"
	}
	return c
}

// Ratios are every subject's records/s over raw's for every workload they
// share; the targets' ratios against raw gate the regression check, and
// keep their names.
func Ratios(r *Results) []bench.Ratio {
	var out bench.Ratios
	for _, c := range Judge(r) {
		if c.Unit == "×" && strings.Contains(c.Name, "vs raw") {
			out.Add(c.Name, c.Value, true)
		}
	}
	for _, c := range r.Cells {
		if c.Target == RawName {
			continue
		}
		out.Add(fmt.Sprintf("%s records/s: %s/raw", c.Workload, c.Target),
			bench.Div(c.Median(RecordsPerSecond), r.Median(RawName, c.Workload, RecordsPerSecond)), false)
	}
	return out.Sorted()
}
