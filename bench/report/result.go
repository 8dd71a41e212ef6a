package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
)

// The matrix run as bench/result renders it: the one table renderer, a
// table per question with a row per target, no prose made from the data.
// The run's JSON stays matrix.Run (cmd/benchcheck reads it); this view is
// only for the report.

// The figures of a point's tables (see matrix.Rep.Figures).
var (
	produceFigures = []string{"records_per_s", "mb_per_s", "ack_p50_s", "ack_p99_s", "ack_p999_s", "ack_max_s"}
	costFigures    = []string{"records_per_batch", "fsyncs_per_batch", "records_per_fsync", "waiting_writes", "device_flushes_per_batch",
		"server_wa", "device_wa", "space_amp", "disk_bytes", "cpu_s_per_m_records", "peak_rss_bytes"}
	readFigures = []string{"tail_records_per_s", "tail_e2e_p50_s", "tail_e2e_p99_s", "catch_up_records_per_s", "catch_up_mb_per_s"}
)

// labels are the headers result would not guess.
var labels = map[string]string{
	"mb_per_s": "MB/s", "server_wa": "server WA", "device_wa": "device WA", "disk_bytes": "disk after stop",
	"cpu_s_per_m_records": "CPU s / M records", "peak_rss_bytes": "peak RSS", "tail_e2e_p50_s": "tail end-to-end p50",
	"tail_e2e_p99_s": "tail end-to-end p99", "catch_up_mb_per_s": "catch-up MB/s", "catch_up_records_per_s": "catch-up records/s",
}

// Result is run as a workload's result: per point of the matrix a table
// of throughput and latency (with the ratios to kfake, JetStream and
// segment), one of what it cost (group commit, amplification, CPU,
// memory) and, for the points that read, one of the reads; then the
// restarts after kill -9 per sync policy.
func Result(run *matrix.Run) *result.Result {
	w := workloads.Workload{Name: run.Name, Title: fmt.Sprintf("Engine comparison: %s (%s profile)", run.Name, run.Profile.Name),
		Description: describe(run), Reps: run.Profile.Reps}
	for _, t := range run.Targets {
		w.Servers = append(w.Servers, t.Name)
	}
	res := &result.Result{Facts: run.Facts, Workload: w}
	res.Setup = append([]string{fmt.Sprintf("profile %s: %d repetition(s) per cell, warm-up %v, measured phase %v, %d partitions; plan: %s",
		run.Profile.Name, run.Profile.Reps, run.Profile.WarmUp, run.Profile.Duration, run.Profile.Partitions, run.Profile.DescribePlan())}, run.Setup...)
	for _, t := range run.Targets {
		res.Setup = append(res.Setup, fmt.Sprintf("%s: %s", t.Name, t.Note))
	}
	cols := func(fs []string, over ...string) []workloads.Column {
		var out []workloads.Column
		for i, f := range fs {
			out = append(out, workloads.Column{Figure: f, Label: labels[f]})
			if i == 0 {
				for _, o := range over {
					out = append(out, workloads.Column{Figure: f, Over: o})
				}
			}
		}
		return out
	}
	var one *matrix.Workload // the point of one record in flight, the others' "× @1"
	for _, p := range run.Points {
		if p.InFlight == 1 && p.Clients() == 1 {
			one = &p.Workload
		}
	}
	for _, p := range run.Points {
		c := cols(produceFigures, "kfake", "nats", "segment")
		c = append(c, workloads.Column{Figure: "ack_p99_s", Per: "ack_p50_s", Label: "p99 / p50"})
		if p.Workload != matrix.Reference && run.Cell("segment", matrix.Reference) != nil {
			c = append(c, workloads.Column{Figure: "records_per_s", OverCell: matrix.Reference.Key(), Label: "× the reference point"})
		}
		if one != nil && p.Workload != *one && p.RecordBytes == one.RecordBytes && p.Acks == one.Acks && p.Sync == one.Sync {
			c = append(c, workloads.Column{Figure: "records_per_s", OverCell: one.Key(), Label: "× @1"})
		}
		add(res, run, p.Workload, p.Key(), p.String(), c)
		add(res, run, p.Workload, p.Key()+"-cost", p.String()+": group commit, amplification, CPU and memory", cols(costFigures))
		if p.Consume {
			add(res, run, p.Workload, p.Key()+"-reads", p.String()+": tail and catch-up reads", cols(readFigures))
		}
	}
	for _, sync := range []string{"always", "interval"} {
		recovery(res, run, sync)
	}
	sweep(res, run, matrix.SliceConcurrency, workloads.Chart{File: "concurrency", Figures: []string{"records_per_s"},
		Title: "records/s against records in flight (1 KiB, acks=all, sync=always)"},
		func(w matrix.Workload) int { return w.InFlight }, func(n int) string { return fmt.Sprint(n) })
	sweep(res, run, matrix.SliceSize, workloads.Chart{File: "size", Figures: []string{"mb_per_s"},
		Title: "MB/s against record size (256 in flight, acks=all, sync=always)"},
		func(w matrix.Workload) int { return w.RecordBytes }, matrix.SizeName)
	return res
}

// sweep charts the points of slice in the order of x, after the table of
// the last point the run holds.
func sweep(res *result.Result, run *matrix.Run, slice string, ch workloads.Chart, x func(matrix.Workload) int, tick func(int) string) {
	var pts []matrix.Workload
	for _, p := range run.Points {
		if p.In(slice) {
			pts = append(pts, p.Workload)
			ch.Cell = p.Key()
		}
	}
	slices.SortFunc(pts, func(a, b matrix.Workload) int { return x(a) - x(b) })
	for _, w := range pts {
		ch.Along, ch.Ticks = append(ch.Along, w.Key()), append(ch.Ticks, tick(x(w)))
	}
	if len(pts) > 1 {
		res.Workload.Charts = append(res.Workload.Charts, ch)
	}
}

// add makes a cell of point w on every target that ran it.
func add(res *result.Result, run *matrix.Run, w matrix.Workload, name, title string, cols []workloads.Column) {
	wc := workloads.Cell{Name: name, Title: title, Columns: cols}
	for _, t := range run.Targets {
		c := run.Cell(t.Name, w)
		if c == nil {
			continue
		}
		wc.Servers = append(wc.Servers, t.Name)
		cell := &result.Cell{Name: name, Server: t.Name}
		res.Cells = append(res.Cells, cell)
		for _, r := range c.Reps {
			cell.Reps = append(cell.Reps, result.Rep{Figures: r.Figures(), Error: r.Error})
		}
	}
	if len(wc.Servers) > 0 {
		res.Workload.Cells = append(res.Workload.Cells, wc)
	}
}

// recovery is the cell of the restarts after kill -9 under sync.
func recovery(res *result.Result, run *matrix.Run, sync string) {
	name := "recovery-" + sync
	wc := workloads.Cell{Name: name, Title: "Recovery after kill -9, sync=" + sync,
		Description: "A fresh broker filled with the recovery data (acks=all), killed with SIGKILL while the producer still sends, " +
			"restarted on the same directory: lost counts acknowledged records missing after the restart; warm and cold time the restart " +
			"from exec to the first record fetched, cold after a second kill -9 with the data's page cache evicted. One run per engine.",
		Columns: []workloads.Column{{Figure: "lost"}, {Figure: "acked"}, {Figure: "recovery_data_bytes"},
			{Figure: "warm_s", Label: "restart (warm)"}, {Figure: "cold_s", Label: "restart (cold)"}, {Figure: "space_amp"}}}
	for _, t := range run.Targets {
		r := run.Recovery(t.Name, sync)
		if r == nil {
			continue
		}
		figs := map[string]float64{"lost": float64(r.Lost), "acked": float64(r.Records), "recovery_data_bytes": float64(r.Bytes)}
		if r.Warm > 0 {
			figs["warm_s"], figs["cold_s"] = r.Warm, r.Cold
		}
		if sa := r.SpaceAmp(); !math.IsNaN(sa) {
			figs["space_amp"] = sa
		}
		wc.Servers = append(wc.Servers, t.Name)
		res.Add(name, t.Name, result.Rep{Figures: figs, Error: r.Error})
	}
	if len(wc.Servers) > 0 {
		res.Workload.Cells = append(res.Workload.Cells, wc)
	}
}

// describe is the report's opening: how the run measured.
func describe(run *matrix.Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Every cell starts its server fresh, as a child process on an empty data directory, warms up for %v, then produces for %v "+
		"in closed loop (franz-go from the benchmark process for the Kafka-protocol servers, nats.go for JetStream) keeping a fixed number of "+
		"records in flight, to a topic of %d partitions (JetStream: one stream); repetitions interleave the cells. "+
		"A batch is a record batch the broker acknowledged; fsyncs are the engines' sync rounds from the broker's /metrics and waiting writes "+
		"the appends one round made durable; device flushes and device WA come from the disk's counters (every process on it counts), "+
		"server WA from the server's /proc/<pid>/io; space amp is the data directory after a clean stop over the payload. "+
		"Tail reads consume at the log end while producing (end-to-end latency from send to receipt); catch-up reads everything from the start "+
		"after a restart with the page cache evicted (durable targets). kfake keeps records in memory and never fsyncs: the protocol's ceiling.",
		run.Profile.WarmUp, run.Profile.Duration, run.Profile.Partitions)
	if run.Interrupted != "" {
		fmt.Fprintf(&b, " **The run was interrupted (%s): cells after that point are missing.**", run.Interrupted)
	}
	return b.String()
}
