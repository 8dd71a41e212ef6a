package logbench

import (
	"fmt"
	"math"
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
		ratio("segment durable append, 256 writers, vs raw-overwrite", a256, RawOverwriteName, 0.9),
		ratio("segment durable append, 256 writers, vs pebble", a256, "pebble", 1.5),
		abs("segment durable append, 256 writers, p99 latency", a256, P99, 0.002, "s"),
		ratio("segment bulk ingest vs raw", WorkloadIngest, RawName, 0.9),
		ratio("segment bulk ingest vs raw-overwrite", WorkloadIngest, RawOverwriteName, 0.9),
		abs("segment bulk ingest write amplification", WorkloadIngest, WriteAmplification, 1.1, "×"),
		abs("segment bulk ingest space amplification", WorkloadIngest, SpaceAmplification, 1.1, "×"),
		ratio("segment cold sequential read vs raw scan", WorkloadRead, RawName, 0.9),
		everyRep(r, "segment cold sequential read vs badger, the lowest of the repetitions' ratios", WorkloadRead, "badger"),
		abs("segment reopen to first read (cold page cache)", WorkloadReopen, Duration, 0.005, "s"),
		abs("segment restart after kill -9 to first read (warm)", WorkloadKill, Duration, 0.100, "s"),
		abs("segment restart after kill -9 to first read (cold page cache)", WorkloadKillCold, Duration, 0.100, "s"),
		fastest(r, "segment restart after kill -9 (warm) against the fastest other engine", WorkloadKill),
		fastest(r, "segment restart after kill -9 (cold) against the fastest other engine", WorkloadKillCold),
	}
}

// everyRep judges segment's records/s over other's, repetition by
// repetition (the run visits both in each), by the lowest ratio: above 1
// means segment was ahead in every one.
func everyRep(r *Results, name, workload, other string) bench.Check {
	lowest := math.Inf(1)
	mine, theirs := r.Samples(Segment, workload), r.Samples(other, workload)
	for i := range min(len(mine), len(theirs)) {
		lowest = min(lowest, RecordsPerSecond(mine[i])/RecordsPerSecond(theirs[i]))
	}
	if len(mine) == 0 || len(theirs) == 0 {
		lowest = math.NaN()
	}
	return missing(r, bench.Judge(name, lowest, "×", true, 1), workload, Segment, other)
}

// fastest judges segment's median time over the fastest other durable
// engine's: at most 1 means segment was the fastest.
func fastest(r *Results, name, workload string) bench.Check {
	best := math.NaN()
	for _, s := range r.Subjects {
		if t := r.Median(s.Name, workload, Duration); s.Name != Segment && !math.IsNaN(t) && (math.IsNaN(best) || t < best) {
			best = t
		}
	}
	return missing(r, bench.Judge(name, r.Median(Segment, workload, Duration)/best, "×", false, 1), workload, Segment)
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
