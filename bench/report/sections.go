package report

import (
	"fmt"
	"math"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
)

func (v *view) latency(rep *bench.Report) {
	s := rep.Section("Latency")
	ref := matrix.Reference
	s.Para("Produce latency at %s: from the producer's Produce call (including any wait for a free in-flight slot) to the acknowledgement, HdrHistogram percentiles.", ref)
	t := s.Table("target", "p50", "p99", "p99.9", "max", "p99 / p50")
	for _, n := range v.targets() {
		t.Row(n, v.fig(n, ref, matrix.P50, millis), v.fig(n, ref, matrix.P99, millis), v.fig(n, ref, matrix.P999, millis),
			v.fig(n, ref, matrix.LatencyMax, millis), ratio(div(v.med(n, ref, matrix.P99), v.med(n, ref, matrix.P50))))
	}
	v.chart(s, ChartLatency)
}

func (v *view) variants(rep *bench.Report) {
	var pts []matrix.Point
	for _, p := range v.run.Points {
		if p.In(matrix.SliceVariants) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return
	}
	s := rep.Section("acks and sync policies")
	ref := matrix.Reference
	s.Para("1 KiB records, %d in flight; × ref compares with acks=all, sync=always. On one broker acks=1 and acks=all both wait for the engine's durability (there are no followers), so they should be close; sync=interval acknowledges before the fsync, which the engine makes every %s.", ref.InFlight, v.interval())
	header := []string{"target", "acks=all sync=always"}
	for _, p := range pts {
		header = append(header, fmt.Sprintf("acks=%s sync=%s", p.Acks, p.Sync), "× ref", "p99")
	}
	t := s.Table(header...)
	for _, n := range v.targets() {
		row := []string{n, v.fig(n, ref, matrix.RecordsPerSec, rate)}
		any := false
		for _, p := range pts {
			if v.run.Cell(n, p.Workload) != nil {
				any = true
			}
			row = append(row, v.fig(n, p.Workload, matrix.RecordsPerSec, rate),
				ratio(div(v.med(n, p.Workload, matrix.RecordsPerSec), v.med(n, ref, matrix.RecordsPerSec))),
				v.fig(n, p.Workload, matrix.P99, millis))
		}
		if any {
			t.Row(row...)
		}
	}
	v.variantFsyncs(s, pts)
	s.Para("Where sync=interval gains little, the engine was not waiting on the disk at 256 in flight: group commit had already made the fsync cheap per record, and the limit is elsewhere (CPU). What sync=interval costs in durability is in the recovery section (kill -9 under each policy).")
}

// variantFsyncs tabulates fsyncs per batch under each policy and says
// where acks=1 ran slower than acks=all, which on one broker it should not.
func (v *view) variantFsyncs(s *bench.Section, pts []matrix.Point) {
	ref := matrix.Reference
	ws := append([]matrix.Workload{ref}, workloadsOf(pts)...)
	header := []string{"fsyncs per batch"}
	for _, w := range ws {
		header = append(header, fmt.Sprintf("acks=%s sync=%s", w.Acks, w.Sync))
	}
	t := s.Table(header...)
	for _, n := range v.engines() {
		row := []string{n}
		for _, w := range ws {
			row = append(row, v.fig(n, w, matrix.FsyncsPerBatch, amp))
		}
		t.Row(row...)
	}

}

func workloadsOf(pts []matrix.Point) []matrix.Workload {
	out := make([]matrix.Workload, len(pts))
	for i, p := range pts {
		out[i] = p.Workload
	}
	return out
}

func (v *view) reads(rep *bench.Report) {
	var pts []matrix.Workload
	for _, p := range v.run.Points {
		if p.Consume {
			pts = append(pts, p.Workload)
		}
	}
	if len(pts) == 0 {
		return
	}
	sortWorkloads(pts)
	s := rep.Section("Reads: tail and catch-up")
	s.Para("Tail: a consumer reads from the log end while the producer runs (%v, same workload): its rate follows the producer's, and its end-to-end latency (send to receipt) is the figure. Catch-up: after the tail phase the server is stopped, the data's page cache evicted and the server restarted (durable targets; kfake and the memory engine are read as they are, warm), then one consumer reads every record from the start as fast as it can.", v.run.Profile.Duration)
	t := s.Table("target", "records", "tail records/s", "end-to-end p50", "end-to-end p99", "catch-up records/s", "catch-up MB/s")
	for _, n := range v.targets() {
		for _, w := range pts {
			if v.run.Cell(n, w) == nil {
				continue
			}
			t.Row(n, matrix.SizeName(w.RecordBytes), v.fig(n, w, matrix.TailRecordsPerSec, rate),
				v.fig(n, w, matrix.TailE2EP50, millis), v.fig(n, w, matrix.TailE2EP99, millis),
				v.fig(n, w, matrix.CatchUpRecordsPerSec, rate), v.fig(n, w, matrix.CatchUpMBPerSec, mbps))
		}
	}
	v.chart(s, ChartReads)
}

func (v *view) amplification(rep *bench.Report) {
	s := rep.Section("Write and space amplification")
	ref := matrix.Reference
	s.Para("At %s, over the measured produce phase: bytes written per payload byte, counted by the server's own /proc/<pid>/io (write_bytes: pages it dirtied, whoever writes them back) and by the disk's /sys/block counters (everything written to the device, including the filesystem's journal and other processes). Space: bytes allocated in the data directory after a clean stop, per payload byte in the log. The recovery data set (below) gives the same space figure on a larger log.", ref)
	t := s.Table("target", "write amp. (server)", "write amp. (device)", "space amp.", "space amp. (recovery set)", "disk after stop")
	for _, n := range v.targets() {
		info, _ := v.run.Target(n)
		if !info.Durable {
			continue
		}
		recSA := "–"
		if r := v.run.Recovery(n, "always"); r != nil && r.Error == "" {
			recSA = amp(r.SpaceAmp())
		}
		t.Row(n, v.fig(n, ref, matrix.ProcWA, amp), v.fig(n, ref, matrix.DeviceWA, amp), v.fig(n, ref, matrix.SpaceAmp, amp), recSA,
			v.fig(n, ref, func(r matrix.Rep) float64 {
				if r.Disk.Files == 0 {
					return math.NaN()
				}
				return float64(r.Disk.Allocated)
			}, bytesOf))
	}
	v.chart(s, ChartAmplification)
	s.Para("Device figures include the journal of the filesystem (%s here) and any other process writing to the disk at the same time: on a busy machine they are an upper bound.", orUnknown(v.run.Machine.Filesystem))

}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func (v *view) resources(rep *bench.Report) {
	s := rep.Section("CPU and memory")
	ref := matrix.Reference
	s.Para("Server CPU (user + system, /proc/<pid>/stat) per million records produced in the measured phase, and the server's peak resident memory (VmHWM) over the cell, at %s; the largest peak over every cell of the run is in the last column.", ref)
	t := s.Table("target", "CPU s / M records", "records/s", "peak RSS", "largest peak RSS (any cell)")
	for _, n := range v.targets() {
		peak := math.NaN()
		for _, c := range v.run.Cells {
			if c.Target == n {
				for _, r := range c.Reps {
					if x := matrix.PeakRSS(r); !math.IsNaN(x) && (math.IsNaN(peak) || x > peak) {
						peak = x
					}
				}
			}
		}
		t.Row(n, v.fig(n, ref, matrix.CPUPerMillion, plain), v.fig(n, ref, matrix.RecordsPerSec, rate),
			v.fig(n, ref, matrix.PeakRSS, bytesOf), bytesOf(peak))
	}
	s.Para("kfake's figure is the protocol and bookkeeping alone, and it holds every record in RAM.")
}

// missingCells lists every cell repetition without a figure, with why.
func (v *view) missingCells() []string {
	var out []string
	for _, c := range v.run.Cells {
		if len(c.Reps) == 0 {
			out = append(out, fmt.Sprintf("%s, %s: not run", c.Target, c.Workload))
			continue
		}
		for i, r := range c.Reps {
			if r.Error != "" {
				out = append(out, fmt.Sprintf("%s, %s, rep %d: %s", c.Target, c.Workload, i+1, r.Error))
			}
		}
	}
	for _, r := range v.run.Recoveries {
		if r.Error != "" {
			out = append(out, fmt.Sprintf("recovery %s sync=%s: %s", r.Target, r.Sync, r.Error))
		}
	}
	return out
}

func (v *view) missing(rep *bench.Report) {
	s := rep.Section("Missing cells")
	m := v.missingCells()
	if len(m) == 0 {
		s.Para("None: every cell of the plan finished in every repetition.")
		return
	}
	s.Para("Cells, or repetitions of them, that failed, with the phase and the reason. Tables show \"missing\" where no repetition of a cell finished; figures of a cell count only the repetitions that did.")
	s.List(m...)
}
