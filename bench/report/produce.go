package report

import (
	"fmt"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

func (v *view) intro(rep *bench.Report) {
	s := rep.Section("What was run")
	r := v.run
	var ts []string
	for _, t := range r.Targets {
		ts = append(ts, fmt.Sprintf("**%s** (%s)", t.Name, t.Note))
	}
	s.Para("Targets: %s.", strings.Join(ts, "; "))
	s.Para("Every cell starts its server fresh, as a child process on an empty data directory, warms up for %v, then produces for %v in closed loop (franz-go from the benchmark process for the Kafka-protocol servers, nats.go for JetStream) keeping a fixed number of records in flight, from one producer client unless the workload says otherwise, to a topic of %d partitions (JetStream: one stream). Figures are medians over %d repetition(s), with [min–max] when there were more; repetitions interleave the cells, so a slow spell of the machine hits every target alike. Plan: %s.",
		r.Profile.WarmUp, r.Profile.Duration, r.Profile.Partitions, r.Profile.Reps, r.Profile.DescribePlan())
	if busy := r.Busy(); busy != "" {
		s.Para("**%s**", busy)
	}
	if r.Interrupted != "" {
		s.Para("**The run was interrupted (%s): cells after that point are missing.**", r.Interrupted)
	}
}

// summary is the table at the top: the fastest engine per workload and
// how it compares.
func (v *view) summary(rep *bench.Report) {
	s := rep.Section("Summary")
	v.summaryTable(s)
	if n := len(v.missingCells()); n > 0 {
		s.Para("%d cell(s) have no figure: see [Missing cells](#missing-cells).", n)
	}
}

// summaryTable is the winner per workload with its ratios.
func (v *view) summaryTable(s *bench.Section) {
	s.Para("The winner is the fastest engine under mini-kafka's broker (median records/s); × next is its lead over the runner-up engine; × kfake and × JetStream compare it with the peers at the same workload (kfake is an in-memory fake cluster that never fsyncs: the protocol ceiling).")
	t := s.Table("workload", "winner", "records/s", "MB/s", "× next", "× kfake", "× JetStream", "winner p99").Left(1)
	for _, p := range v.run.Points {
		best, bestV, vsNext, next := leader(v.engines(), func(n string) float64 { return v.med(n, p.Workload, matrix.RecordsPerSec) })
		if best == "" {
			t.Row(p.String(), "no engine finished")
			continue
		}
		nextText := ratio(vsNext)
		if next != "" {
			nextText += " " + next
		}
		t.Row(p.String(), "**"+best+"**", rate(bestV), mbps(v.med(best, p.Workload, matrix.MBPerSec)), nextText,
			ratio(div(bestV, v.med("kfake", p.Workload, matrix.RecordsPerSec))),
			ratio(div(bestV, v.med("nats", p.Workload, matrix.RecordsPerSec))),
			millis(v.med(best, p.Workload, matrix.P99)))
	}
}

// sweep renders a table of one figure: a row per target, a column per
// point of the slice.
func (v *view) sweep(s *bench.Section, slice string, col func(matrix.Workload) string, f matrix.Figure, format func(float64) string) {
	var pts []matrix.Workload
	for _, p := range v.run.Points {
		if p.In(slice) {
			pts = append(pts, p.Workload)
		}
	}
	sortWorkloads(pts)
	header := []string{"target"}
	for _, w := range pts {
		header = append(header, col(w))
	}
	t := s.Table(header...)
	for _, n := range v.targets() {
		row := []string{n}
		for _, w := range pts {
			row = append(row, v.fig(n, w, f, format))
		}
		t.Row(row...)
	}
}

func inFlight(w matrix.Workload) string { return fmt.Sprintf("%d in flight", w.InFlight) }
func sizeCol(w matrix.Workload) string  { return matrix.SizeName(w.RecordBytes) }

func (v *view) concurrency(rep *bench.Report) {
	s := rep.Section("Throughput against concurrency")
	s.Para("Records/s with 1 KiB records, acks=all, sync=always, against the records the producer keeps in flight.")
	v.sweep(s, matrix.SliceConcurrency, inFlight, matrix.RecordsPerSec, rate)
	v.chart(s, ChartConcurrency)
}

// sweepEnds returns the lowest and highest concurrency of the sweep.
func (v *view) sweepEnds() (lo, hi *matrix.Workload) {
	for _, p := range v.run.Points {
		if !p.In(matrix.SliceConcurrency) {
			continue
		}
		w := p.Workload
		if lo == nil || w.InFlight < lo.InFlight {
			lo = &w
		}
		if hi == nil || w.InFlight > hi.InFlight {
			hi = &w
		}
	}
	if lo != nil && hi != nil && lo.InFlight == hi.InFlight {
		return nil, nil
	}
	return lo, hi
}

// groupCommit answers "per-record fsync against group commit": one
// record in flight against many, from one producer (the client batches)
// and from many producers (the broker's group commit batches), with the
// fsync counts behind them.
func (v *view) groupCommit(rep *bench.Report) {
	lo, hi := v.sweepEnds()
	if lo == nil {
		return
	}
	pts := []matrix.Workload{*lo, *hi}
	for _, p := range v.run.Points {
		if p.In(matrix.SliceProducers) {
			pts = append(pts, p.Workload)
		}
	}
	s := rep.Section("Per-record fsync against group commit")
	s.Para("acks=all, sync=always, 1 KiB records. A batch is a Kafka record batch the broker acknowledged (one per partition per produce request). Fsyncs are the engines' sync rounds from the broker's /metrics (each durable engine reports every round that made appends durable); device flushes come from the disk's counters, which every process on the disk adds to. Waiting writes is the mean number of appends one sync round made durable (the engine's group-commit size). × @%d is the rate over the same target's rate at %d in flight.",
		lo.InFlight, lo.InFlight)
	t := s.Table("workload", "target", "records/s", "records/batch", "fsyncs/batch", "records/fsync", "waiting writes", "device flushes/batch", fmt.Sprintf("× @%d", lo.InFlight)).Left(0)
	for _, w := range pts {
		for _, n := range v.targets() {
			if n == "nats" || v.run.Cell(n, w) == nil {
				continue
			}
			t.Row(shortWorkload(w), n, v.fig(n, w, matrix.RecordsPerSec, rate), v.fig(n, w, matrix.RecordsPerBatch, plain),
				v.fig(n, w, matrix.FsyncsPerBatch, amp), v.fig(n, w, matrix.RecordsPerFsync, plain), v.fig(n, w, matrix.Waiters, plain),
				v.fig(n, w, matrix.DeviceFlushesPerBatch, amp),
				ratio(div(v.med(n, w, matrix.RecordsPerSec), v.med(n, *lo, matrix.RecordsPerSec))))
		}
	}
}

func shortWorkload(w matrix.Workload) string {
	if w.Producers > 1 {
		return fmt.Sprintf("%d in flight, %d producers", w.InFlight, w.Producers)
	}
	return fmt.Sprintf("%d in flight, 1 producer", w.InFlight)
}

func (v *view) sizes(rep *bench.Report) {
	s := rep.Section("Record size")
	s.Para("MB/s at %d in flight, acks=all, sync=always; records/s below.", matrix.Reference.InFlight)
	v.sweep(s, matrix.SliceSize, sizeCol, matrix.MBPerSec, mbps)
	v.sweep(s, matrix.SliceSize, sizeCol, matrix.RecordsPerSec, rate)
	v.chart(s, ChartSize)
}
