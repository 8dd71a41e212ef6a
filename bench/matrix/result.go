package matrix

import (
	"math"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// Run is everything one benchmark run measured; it is what results.json
// holds and what the report is rendered from.
type Run struct {
	Name    string  `json:"name"`
	Profile Profile `json:"profile"`
	// Facts say where and how it ran; Setup, how every target was started
	// and driven.
	bench.Facts
	Targets []TargetInfo `json:"targets"`
	Points  []Point      `json:"points"`

	Cells      []*Cell     `json:"cells"`
	Recoveries []*Recovery `json:"recoveries"`
	// SyncInterval is the servers' fsync period under sync=interval.
	SyncInterval time.Duration `json:"sync_interval_ns"`
	// Interrupted says why the run stopped early, if it did.
	Interrupted string `json:"interrupted,omitempty"`
}

// TargetInfo describes a target in the run.
type TargetInfo struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Durable bool   `json:"durable"`
	Note    string `json:"note"`
}

// Cell is one target under one workload, over the repetitions.
type Cell struct {
	bench.Cell[Rep]
	Kind string `json:"kind"`
	Workload
}

// Rep is one repetition of a cell: a fresh server on an empty directory,
// a warm-up, the measured produce phase, and, for consume points, a tail
// read and a catch-up read. Counters that a target cannot report are -1.
type Rep struct {
	// Error says which phase failed and why; figures of the phases before
	// it are kept.
	Error string `json:"error,omitempty"`

	Produce load.ProduceResult `json:"produce"`
	// Batches is the number of produce batches acknowledged in the measured
	// phase (a Kafka record batch per partition per request; a message for
	// JetStream).
	Batches int64 `json:"batches"`
	// Fsyncs is the server's sync rounds over the measured phase (broker
	// /metrics: each fsync or synced commit the engine's group commit made);
	// CommitWaiters the mean number of appends a round made durable (the
	// group-commit size, as the engine reports it).
	Fsyncs        int64   `json:"fsyncs"`
	CommitWaiters float64 `json:"commit_waiters"`
	// Device is the block device's counters over the measured phase: every
	// process on the device counts.
	Device bench.DiskStats `json:"device"`
	// ProcWritten is the bytes the server process caused to be written to
	// storage (/proc/<pid>/io write_bytes) over the measured phase.
	ProcWritten int64 `json:"proc_written_bytes"`
	// CPUSeconds is the server's user+system CPU over the measured phase.
	CPUSeconds float64 `json:"cpu_s"`
	// PeakRSS is the server's VmHWM at the end of its produce phases.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// LogPayload is every acknowledged payload byte in the log (warm-up,
	// measured and tail phases); Disk is the data directory after a clean
	// stop. Disk.Files is 0 for servers that keep nothing on disk.
	LogPayload int64       `json:"log_payload_bytes"`
	Disk       bench.Usage `json:"disk"`

	Tail    *load.EndToEndResult `json:"tail,omitempty"`
	CatchUp *load.ConsumeResult  `json:"catch_up,omitempty"`
	// CatchUpCold says the catch-up read ran on a restarted server with
	// the data's page cache evicted; otherwise it read a warm server.
	CatchUpCold bool `json:"catch_up_cold"`
}

// OK reports whether the measured produce phase finished.
func (r Rep) OK() bool { return r.Produce.Records > 0 && r.Produce.Errors == 0 }

// Failure implements bench.Rep.
func (r Rep) Failure() string { return r.Error }

// Figures are the repetition's figures by bench/result's names (the unit
// in the name); one it did not measure is absent. Those of the produce
// phase and of what it cost need the phase finished (OK); WA is bytes
// written (by the device, or by the server process) per payload byte, space
// amp the data directory after a clean stop per payload byte in the log.
func (r Rep) Figures() map[string]float64 {
	f := map[string]float64{}
	put := func(name string, v float64, measured bool) {
		if measured && !math.IsNaN(v) && !math.IsInf(v, 0) {
			f[name] = v
		}
	}
	p, ok := r.Produce, r.OK()
	put("records_per_s", p.RecordsPerSec, ok)
	put("mb_per_s", p.MBPerSec, ok)
	put("ack_p50_s", p.Latency.P50.Seconds(), ok)
	put("ack_p99_s", p.Latency.P99.Seconds(), ok)
	put("ack_p999_s", p.Latency.P999.Seconds(), ok)
	put("ack_max_s", p.Latency.Max.Seconds(), ok)
	put("records_per_batch", float64(p.Records)/float64(r.Batches), ok && r.Batches > 0)
	put("fsyncs_per_batch", float64(r.Fsyncs)/float64(r.Batches), ok && r.Fsyncs >= 0 && r.Batches > 0)
	put("records_per_fsync", float64(p.Records)/float64(r.Fsyncs), ok && r.Fsyncs > 0)
	put("waiting_writes", r.CommitWaiters, ok && r.CommitWaiters >= 0)
	// The device's flushes count every process on it: noisy.
	put("device_flushes_per_batch", float64(r.Device.FlushOps)/float64(r.Batches), ok && r.Batches > 0)
	put("server_wa", float64(r.ProcWritten)/float64(p.Bytes), ok && p.Bytes > 0 && r.ProcWritten > 0)
	put("device_wa", float64(r.Device.WrittenBytes)/float64(p.Bytes), ok && p.Bytes > 0 && r.Device.WrittenBytes > 0)
	put("space_amp", float64(r.Disk.Allocated)/float64(r.LogPayload), ok && r.Disk.Files > 0 && r.LogPayload > 0)
	put("disk_bytes", float64(r.Disk.Allocated), r.Disk.Files > 0)
	put("cpu_s_per_m_records", r.CPUSeconds/float64(p.Records)*1e6, ok && r.CPUSeconds >= 0 && p.Records > 0)
	put("peak_rss_bytes", float64(r.PeakRSS), ok && r.PeakRSS > 0)
	if t := r.Tail; t != nil {
		e := t.Consume.EndToEnd
		put("tail_records_per_s", t.Consume.RecordsPerSec, t.Consume.Records > 0)
		put("tail_e2e_p50_s", e.P50.Seconds(), e.Count > 0)
		put("tail_e2e_p99_s", e.P99.Seconds(), e.Count > 0)
	}
	if c := r.CatchUp; c != nil {
		put("catch_up_records_per_s", c.RecordsPerSec, c.Records > 0)
		put("catch_up_mb_per_s", c.MBPerSec, c.Records > 0)
	}
	return f
}

// Spread is a figure (see Rep.Figures) over the cell's repetitions
// (failed or unmeasured repetitions are left out); a nil cell has none.
func (c *Cell) Spread(figure string) bench.Spread {
	if c == nil {
		return bench.SpreadOf(nil) // c.Cell would dereference nil
	}
	return c.Cell.Spread(func(r Rep) float64 {
		if v, ok := r.Figures()[figure]; ok {
			return v
		}
		return math.NaN()
	})
}

// Median is the figure's median, NaN when nothing was measured.
func (c *Cell) Median(figure string) float64 { return c.Spread(figure).Median }

// OKReps counts the repetitions whose produce phase finished.
func (c *Cell) OKReps() int {
	if c == nil {
		return 0
	}
	n := 0
	for _, r := range c.Reps {
		if r.OK() {
			n++
		}
	}
	return n
}

// Cell finds the cell of target under w, or nil.
func (r *Run) Cell(target string, w Workload) *Cell {
	for _, c := range r.Cells {
		if c.Target == target && c.Workload == w {
			return c
		}
	}
	return nil
}

// Target returns the description of the named target.
func (r *Run) Target(name string) (TargetInfo, bool) {
	for _, t := range r.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return TargetInfo{}, false
}

// Recovery is the crash figure of one durable target under one sync
// policy: produce Bytes, kill -9 the server while it is still producing,
// restart it on the same directory and time exec to the first fetch that
// returns a record; then check every acknowledged record is there.
type Recovery struct {
	Target string `json:"target"`
	Sync   string `json:"sync"`
	// Bytes is the payload acknowledged before the kill; Records the
	// records acknowledged in all.
	Bytes   int64 `json:"bytes"`
	Records int64 `json:"records"`
	// Lost is how many acknowledged records were missing after recovery
	// (acknowledged offsets at or past a partition's recovered end).
	Lost int64 `json:"lost"`
	// Warm is exec to first fetched record with the page cache as the kill
	// left it; Cold the same after a second kill -9 and the data's page
	// cache evicted. Seconds; 0 when not measured.
	Warm float64 `json:"warm_s"`
	Cold float64 `json:"cold_s"`
	// Disk is the data directory after a clean stop at the end.
	Disk  bench.Usage `json:"disk"`
	Error string      `json:"error,omitempty"`
}

// SpaceAmp is the bytes allocated per acknowledged payload byte.
func (r *Recovery) SpaceAmp() float64 {
	if r.Disk.Files == 0 || r.Bytes <= 0 {
		return math.NaN()
	}
	return float64(r.Disk.Allocated) / float64(r.Bytes)
}

// Recovery finds the recovery of target under the sync policy, or nil.
func (r *Run) Recovery(target, sync string) *Recovery {
	for _, x := range r.Recoveries {
		if x.Target == target && x.Sync == sync {
			return x
		}
	}
	return nil
}
