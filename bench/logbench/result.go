package logbench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
)

// The engines profile's run in the one result schema (bench/result): a
// cell per workload of the run, a repetition per sample, the subjects as
// the servers, and the report's columns and targets as the data of the
// workload it carries, so that result renders and judges it as it does
// every other profile's run. The measuring stays here: every workload of
// a subject shares one ingested log (ingest, then its reads, reopens,
// restarts after kill -9, truncations and deletion), which the runner's
// fresh server per cell does not model.

// Figures of a sample, by result's naming (the unit in the name).
var sampleFigures = map[string]Metric{
	"records_per_s":        RecordsPerSecond,
	"mb_per_s":             metric(func(s Sample) float64 { return BytesPerSecond(s) / 1e6 }),
	"time_s":               Duration,
	"p50_s":                P50,
	"p99_s":                P99,
	"device_wa":            WriteAmplification,
	"space_amp":            SpaceAmplification,
	"disk_bytes":           DiskBytes,
	"apparent_bytes":       ApparentBytes,
	"device_read_bytes":    DeviceReadBytes,
	"device_written_bytes": DeviceWrittenBytes,
	"freed_bytes":          FreedBytes,
}

// Load reads an engines.json in logbench's own format (see Parse).
func Load(path string) (*Results, error) { return bench.Load(path, Parse) }

// Parse reads an engines.json written before the profile's results were
// in the one schema (results/engines.json as committed), to render or
// compare it as one (Result).
func Parse(b []byte) (*Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Result is r in the one result schema.
func (r *Results) Result() *result.Result {
	res := &result.Result{Facts: r.Facts, Workload: *r.Workload()}
	for _, c := range r.Cells {
		for _, s := range c.Reps {
			rep := result.Rep{Figures: map[string]float64{}, Error: s.Err}
			for name, m := range sampleFigures {
				if v := m(s); !math.IsNaN(v) && !math.IsInf(v, 0) {
					rep.Figures[name] = v
				}
			}
			if strings.HasPrefix(s.Cache, "cold") {
				rep.Figures["cold"] = 1 // the read came from the device (see evict)
			} else if strings.HasPrefix(s.Cache, "warm") {
				rep.Figures["cold"] = 0
			}
			res.Add(c.Workload, c.Target, rep)
		}
	}
	if res.Setup = []string{"page-cache eviction: " + r.CacheControl}; r.DeviceNote != "" {
		res.Setup = append(res.Setup, "device counters: "+r.DeviceNote)
	}
	if b := r.Background; b != nil {
		res.Setup = append(res.Setup, fmt.Sprintf("background device writes before the run: %d B in %.1f s, counted in every WA figure too", b.WrittenBytes, b.Seconds))
	}
	for _, s := range r.Subjects {
		res.Setup = append(res.Setup, fmt.Sprintf("%s: %s", s.Name, s.Note))
	}
	res.Checks = res.Judge()
	return res
}

// Workload is the engines profile as result renders and judges it: the
// cells r ran, each on the subjects that took part, and the targets.
func (r *Results) Workload() *workloads.Workload {
	c := r.Config
	w := &workloads.Workload{Name: "engines", Title: "Engine benchmarks", Reps: c.Reps,
		Description: fmt.Sprintf("Every subject runs in this one process, repetition by repetition: each repetition visits every subject in turn. "+
			"raw is a plain O_APPEND file written and fdatasync'd by one flusher per group of writers: what an appending log gets from this filesystem; "+
			"raw-overwrite runs the same loops over a pre-zeroed file, so fdatasync journals no size or extent change: the disk's ceiling. "+
			"Device figures (WA, device read and written) are deltas of the block device's own counters over the workload, every process's writes included. "+
			"Durability is fdatasync under each engine's sync=always policy. The bulk ingest is %d records of %d B in batches of %d, "+
			"one Sync per batch; the later workloads of a subject read, reopen, kill and cut that log.", c.Records, c.RecordBytes, c.BatchRecords)}
	vs := func(over ...string) []workloads.Column {
		var out []workloads.Column
		for _, o := range over {
			out = append(out, workloads.Column{Figure: "records_per_s", Over: o, Label: "× " + o})
		}
		return out
	}
	rate := []workloads.Column{{Figure: "records_per_s"}, {Figure: "mb_per_s", Label: "MB/s"}}
	add := func(name, title, desc string, cols ...workloads.Column) {
		var servers []string
		for _, s := range r.Subjects {
			if r.Cell(s.Name, name) != nil {
				servers = append(servers, s.Name)
			}
		}
		if len(servers) > 0 {
			w.Cells = append(w.Cells, workloads.Cell{Name: name, Title: title, Description: desc, Servers: servers, Reps: c.Reps, Columns: cols})
			w.Servers = appendNew(w.Servers, servers...)
		}
	}
	var writers []int
	for _, cell := range r.Cells {
		var n int
		if _, err := fmt.Sscanf(cell.Workload, "append-%d", &n); err == nil && !slices.Contains(writers, n) {
			writers = append(writers, n)
		}
	}
	slices.Sort(writers)
	for _, n := range writers {
		title := fmt.Sprintf("Durable append, %d writers", n)
		if n == 1 {
			title = "Durable append, 1 writer"
		}
		add(AppendWorkload(n), title,
			fmt.Sprintf("%d concurrent writer(s), each appending one %d-byte record per batch and waiting for Sync before the next, for %v; latency is Append+Sync as one writer sees it.", n, c.AppendRecordBytes, c.AppendDuration),
			append(append(rate, workloads.Column{Figure: "p50_s"}, workloads.Column{Figure: "p99_s"}, workloads.Column{Figure: "device_wa", Label: "device WA"}), vs(RawName, RawOverwriteName, "pebble")...)...)
	}
	add(WorkloadIngest, "Bulk ingest", "WA is what the device wrote from open to close over the payload; SA the bytes allocated after close over the payload (preallocated space counts; apparent is the files' length).",
		append(append(rate, workloads.Column{Figure: "p99_s", Label: "batch p99"}, workloads.Column{Figure: "device_wa", Label: "WA"},
			workloads.Column{Figure: "space_amp", Label: "SA"}, workloads.Column{Figure: "disk_bytes", Label: "on disk"},
			workloads.Column{Figure: "apparent_bytes", Label: "apparent"}), vs(RawName, RawOverwriteName, "pebble")...)...)
	add(WorkloadRead, "Sequential read", fmt.Sprintf("The ingested log read back from its first offset, %d bytes per read, after a clean close and a reopen, with the data evicted from the page cache.", scanMaxBytes),
		append(append(rate, workloads.Column{Figure: "device_read_bytes", Label: "device read"}, workloads.Column{Figure: "cold", Label: "cold cache (1: yes)"}),
			vs(RawName, "pebble")...)...)
	restart := []workloads.Column{{Figure: "time_s", Label: "open to first read"}, {Figure: "device_read_bytes", Label: "device read"},
		{Figure: "cold", Label: "cold cache (1: yes)"}}
	add(WorkloadReopen, "Reopen to first read, cold", "After a clean close: Open until the first record was read, with the log evicted from the page cache.", restart...)
	add(WorkloadReopenWarm, "Reopen to first read, warm", "The same again at once, cache warm.", restart...)
	add(WorkloadKill, "Restart after kill -9, warm", "A child process appends to the log and is killed with SIGKILL; a second child opens it and reads its first record, timed from before Open.", restart...)
	add(WorkloadKillCold, "Restart after kill -9, cold", "The same with the log evicted from the page cache first.", restart...)
	for _, pct := range TruncateShares {
		add(TruncateWorkload(pct), fmt.Sprintf("Truncate of the last %d %%", pct), "On the log the restarts left, from the whole log; written is what the device wrote meanwhile.",
			workloads.Column{Figure: "time_s", Label: "time"}, workloads.Column{Figure: "device_written_bytes", Label: "written"})
	}
	add(WorkloadDeleteHalf, "DeleteBefore of the oldest half", "Freed is how much the directory's allocation shrank, measured after the engine closed.",
		workloads.Column{Figure: "time_s", Label: "time"}, workloads.Column{Figure: "freed_bytes", Label: "freed"})
	add(WorkloadCatchUp, "Follower catch-up", fmt.Sprintf("The ingest's records appended into a fresh log as a follower receives them: fetches of %d batches of %d records, one Sync per fetch; latency is one fetch's.", fetchBatches, fetchBatchRecords),
		append(append(rate, workloads.Column{Figure: "p99_s", Label: "fetch p99"}, workloads.Column{Figure: "device_wa", Label: "device WA"}), vs(RawName, RawOverwriteName)...)...)
	w.Targets = targets(w)
	return w
}

// targets are the segment engine's, against the same run's raw baseline
// and the other engines; those of a cell or server the run left out go.
func targets(w *workloads.Workload) []workloads.Target {
	at := func(name, cell, figure, over, stat string, atLeast bool, bound float64) workloads.Target {
		t := workloads.Target{Name: name, Cell: cell, Server: Segment, Figure: figure, Over: over, Stat: stat, Gate: over == RawName}
		if atLeast {
			t.AtLeast = &bound
		} else {
			t.AtMost = &bound
		}
		return t
	}
	a256 := AppendWorkload(256)
	all := []workloads.Target{
		at("segment durable append, 256 writers, vs raw", a256, "records_per_s", RawName, "", true, 0.95),
		at("segment durable append, 256 writers, vs raw-overwrite", a256, "records_per_s", RawOverwriteName, "", true, 0.9),
		at("segment durable append, 256 writers, vs pebble", a256, "records_per_s", "pebble", "", true, 1.5),
		at("segment durable append, 256 writers, p99 latency", a256, "p99_s", "", "", false, 0.002),
		at("segment bulk ingest vs raw", WorkloadIngest, "records_per_s", RawName, "", true, 0.9),
		at("segment bulk ingest vs raw-overwrite", WorkloadIngest, "records_per_s", RawOverwriteName, "", true, 0.9),
		at("segment bulk ingest write amplification", WorkloadIngest, "device_wa", "", "", false, 1.1),
		at("segment bulk ingest space amplification", WorkloadIngest, "space_amp", "", "", false, 1.1),
		at("segment cold sequential read vs raw scan", WorkloadRead, "records_per_s", RawName, "", true, 0.9),
		at("segment reopen to first read (cold page cache)", WorkloadReopen, "time_s", "", "", false, 0.005),
		at("segment restart after kill -9 to first read (warm)", WorkloadKill, "time_s", "", "", false, 0.100),
		at("segment restart after kill -9 to first read (cold page cache)", WorkloadKillCold, "time_s", "", "", false, 0.100),
	}
	every := at("segment cold sequential read vs badger, the lowest of the repetitions' ratios", WorkloadRead, "records_per_s", "badger", "min", true, 1)
	every.Paired = true
	all = append(all, every)
	for _, other := range []string{"pebble", "badger"} {
		all = append(all,
			at("segment restart after kill -9 (warm) against "+other, WorkloadKill, "time_s", other, "", false, 1),
			at("segment restart after kill -9 (cold) against "+other, WorkloadKillCold, "time_s", other, "", false, 1))
	}
	var out []workloads.Target
	for _, t := range all {
		c := w.Cell(t.Cell)
		if c != nil && slices.Contains(c.Servers, t.Server) && (t.Over == "" || slices.Contains(c.Servers, t.Over)) {
			out = append(out, t)
		}
	}
	return out
}

func appendNew(xs []string, ys ...string) []string {
	for _, y := range ys {
		if !slices.Contains(xs, y) {
			xs = append(xs, y)
		}
	}
	return xs
}

// Segment is the engine the targets are about.
const Segment = "segment"
