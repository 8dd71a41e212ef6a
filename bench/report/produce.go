package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/engine"
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
	lo, hi := v.sweepEnds()
	if lo == nil || hi == nil {
		return
	}
	eng := v.engines()
	costs := ""
	if c := v.notes("%s: %s", func(n engine.Notes) string { return n.CommitCost }); c != "" {
		costs = " (" + c + ")"
	}
	s.Para("At %d in flight each record waits for its own acknowledgement, and under sync=always for an fsync: %s records/s. That is the disk's flush latency plus one round trip per record, which no engine design removes; what separates the engines there is how many flushes one commit costs%s.",
		lo.InFlight, list(eng, func(n string) string { return rate(v.med(n, *lo, matrix.RecordsPerSec)) }), costs)
	best, bestV, vsNext, next := leader(eng, func(n string) float64 { return v.med(n, *hi, matrix.RecordsPerSec) })
	if best == "" {
		return
	}
	s.Para("At %d in flight %s leads with %s records/s%s.%s",
		hi.InFlight, best, rate(bestV), lead(vsNext, next), strings.TrimSuffix(" "+sentence(best+" %s.", v.design(best).WritePath), " "))
	if k := v.med("kfake", *hi, matrix.RecordsPerSec); !math.IsNaN(k) {
		s.Para("kfake, which keeps records in memory and never fsyncs, reaches %s records/s at %d in flight: what the client, the Kafka protocol and this machine's %s allow. An engine near it is bound by that shared work (the producer, the broker's request handling and the server run on the same cores), not by its storage.",
			rate(k), hi.InFlight, v.run.Cores())
	}
}

// lead is " (1.23× the runner-up, pebble)", or nothing without a
// runner-up.
func lead(vsNext float64, next string) string {
	if next == "" || math.IsNaN(vsNext) {
		return ""
	}
	return fmt.Sprintf(" (%s the runner-up, %s)", ratio(vsNext), next)
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
	rounds := v.notes("%s: %s", func(n engine.Notes) string { return n.CommitCost })
	if rounds != "" {
		rounds = "; " + rounds
	}
	s.Para("acks=all, sync=always, 1 KiB records. A batch is a Kafka record batch the broker acknowledged (one per partition per produce request). Fsyncs are the engines' sync rounds from the broker's /metrics (each durable engine reports every round that made appends durable%s); device flushes come from the disk's counters, which every process on the disk adds to. Waiting writes is the mean number of appends one sync round made durable (the engine's group-commit size). × @%d is the rate over the same target's rate at %d in flight.",
		rounds, lo.InFlight, lo.InFlight)
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
	v.groupCommitText(s, *lo, *hi, pts[2:])
}

func shortWorkload(w matrix.Workload) string {
	if w.Producers > 1 {
		return fmt.Sprintf("%d in flight, %d producers", w.InFlight, w.Producers)
	}
	return fmt.Sprintf("%d in flight, 1 producer", w.InFlight)
}

// groupCommitText explains the table from its own figures.
func (v *view) groupCommitText(s *bench.Section, lo, hi matrix.Workload, many []matrix.Workload) {
	const seg = "segment"
	up := div(v.med(seg, hi, matrix.RecordsPerSec), v.med(seg, lo, matrix.RecordsPerSec))
	if math.IsNaN(up) {
		return
	}
	s.Para("From one producer, %d records in flight make segment %s faster than one at a time. The batching happens in the client: franz-go packs the records waiting to be sent into one record batch per partition (%s records per batch here), and the broker makes about one fsync per batch (%s fsyncs per batch; %s produce writes waiting on average): the broker has little to group, the client already did.",
		hi.InFlight, ratio(up), plain(v.med(seg, hi, matrix.RecordsPerBatch)), amp(v.med(seg, hi, matrix.FsyncsPerBatch)), plain(v.med(seg, hi, matrix.Waiters)))
	for _, w := range many {
		fpb := v.med(seg, w, matrix.FsyncsPerBatch)
		if math.IsNaN(fpb) {
			continue
		}
		text := fmt.Sprintf("Spread over %d producers (%s in flight each), the batches are small and many are waiting at once (%s on average): there the broker's group commit does the grouping, %s fsyncs per batch for segment, one fsync for every %s batches. The rate is %s the one-at-a-time rate",
			w.Producers, records(w.PerClient()), plain(v.med(seg, w, matrix.Waiters)), amp(fpb), plain(1/fpb),
			ratio(div(v.med(seg, w, matrix.RecordsPerSec), v.med(seg, lo, matrix.RecordsPerSec))))
		if k := v.med("kfake", w, matrix.RecordsPerSec); !math.IsNaN(k) {
			text += fmt.Sprintf("; kfake, which never fsyncs, manages %s records/s with the same producers, so what bounds this workload is the cost of a produce request per record or two (client, protocol, broker) on %s, not the disk", rate(k), v.run.Cores())
		}
		s.Para("%s.", text)
	}
}

func (v *view) sizes(rep *bench.Report) {
	s := rep.Section("Record size")
	s.Para("MB/s at %d in flight, acks=all, sync=always; records/s below.", matrix.Reference.InFlight)
	v.sweep(s, matrix.SliceSize, sizeCol, matrix.MBPerSec, mbps)
	v.sweep(s, matrix.SliceSize, sizeCol, matrix.RecordsPerSec, rate)
	v.chart(s, ChartSize)
	big := v.largest(matrix.SliceSize)
	if big == nil {
		return
	}
	best, bestV, vsNext, next := leader(v.engines(), func(n string) float64 { return v.med(n, *big, matrix.MBPerSec) })
	if best == "" {
		return
	}
	s.Para("Small records cost per record (protocol decoding, CRC checks, allocation, one callback each): records/s fall slowly as records grow while MB/s climb. At %s the per-byte cost dominates: %s leads with %s MB/s%s. What each engine writes per payload byte is in the write amplification below, by design and as measured.",
		matrix.SizeName(big.RecordBytes), best, mbps(bestV), lead(vsNext, next))
}

// largest is the point with the largest records in a slice.
func (v *view) largest(slice string) *matrix.Workload {
	var out *matrix.Workload
	for _, p := range v.run.Points {
		if p.In(slice) && (out == nil || p.RecordBytes > out.RecordBytes) {
			w := p.Workload
			out = &w
		}
	}
	return out
}
