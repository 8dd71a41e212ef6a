package logbench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka/bench"
)

// Report renders r as the markdown document results/engines.md holds.
// Every figure in it comes from r.
func Report(r *Results) *bench.Report {
	rep := &bench.Report{Title: "Engine benchmarks"}
	s := rep.Section("Run")
	s.List(
		"date: "+r.Date.Format("2006-01-02 15:04:05 MST"),
		"command: `"+r.Command+"`",
		"commit: "+r.Commit,
		fmt.Sprintf("repetitions: %d per figure; tables show the median and [min–max]; ratios compare medians", r.Config.Reps),
		"subjects: "+subjectNotes(r),
	)
	if w := busyWarning(r); w != "" {
		s.Para("**%s**", w)
	}
	targetSection(rep, r)
	methodSection(rep, r)
	appendSections(rep, r)
	ingestSection(rep, r)
	readSection(rep, r)
	reopenSection(rep, r)
	machineSection(rep, r)
	return rep
}

// busyWarning flags a run whose machine was doing other work: a load
// average above half the CPUs, before or after.
func busyWarning(r *Results) string {
	worst := max(loadOf(r.Machine.LoadAvg), loadOf(r.LoadAfter))
	if r.Machine.CPUs == 0 || worst <= float64(r.Machine.CPUs)/2 {
		return ""
	}
	return fmt.Sprintf("The machine was busy during this run (1-minute load average up to %.1f on %d CPUs): figures are noisy; compare ratios within the run, not with other runs.",
		worst, r.Machine.CPUs)
}

// loadOf reads the 1-minute load from a /proc/loadavg line.
func loadOf(loadavg string) float64 {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

func subjectNotes(r *Results) string {
	var parts []string
	for _, s := range r.Subjects {
		parts = append(parts, fmt.Sprintf("**%s** (%s)", s.Name, s.Note))
	}
	return strings.Join(parts, "; ")
}

func methodSection(rep *bench.Report, r *Results) {
	rep.Section("How to read this").List(
		"Every subject runs in this one process, repetition by repetition: each repetition visits every subject in turn, so a slow spell of the machine spreads over all of them.",
		"Ratios (× raw, × pebble) divide medians of records/s measured in this run.",
		"raw is a plain O_APPEND file written and fdatasync'd by one flusher per group of writers: what an appending log gets from this filesystem. raw-overwrite runs the same loops over a pre-zeroed file, so fdatasync journals no size or extent change: the disk's ceiling, reached by a log that recycles its files.",
		"Device figures (WA, device read) are deltas of the block device's own counters over the workload; they count every process using that device, so background writes (see Machine) inflate them.",
		fmt.Sprintf("Data sit in %s; durability is fdatasync under each engine's sync=always policy.", r.Machine.Dir),
	)
}

func targetSection(rep *bench.Report, r *Results) {
	s := rep.Section("Targets (issue 2)")
	var lines []string
	for _, t := range r.Targets {
		lines = append(lines, t.String())
	}
	s.List(lines...)
}

// cell is a spread as "median [min–max]" (just the median with one value).
func cell(sp bench.Spread, format func(float64) string) string {
	if !sp.OK() {
		return "–"
	}
	if sp.N == 1 || format(sp.Min) == format(sp.Max) {
		return format(sp.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", format(sp.Median), format(sp.Min), format(sp.Max))
}

func ratioCell(sr, base *SubjectResult, workload string) string {
	if base == nil || sr == base {
		return "–"
	}
	return bench.Times(sr.Median(workload, RecordsPerSecond) / base.Median(workload, RecordsPerSecond))
}

// failures says how many repetitions of a workload failed, and the first
// error, so that a missing figure is explained in its row.
func failures(sr *SubjectResult, workload string) string {
	all := sr.Of(workload)
	var n int
	first := ""
	for _, s := range all {
		if s.Err != "" {
			if n == 0 {
				first = s.Err
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d failed: %s", n, len(all), first)
}

func amp(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func mbps(v float64) string { return bench.MB(v) }

func bytesCell(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return bench.Bytes(int64(v))
}

// diskCell is the median allocated size, with the apparent size (sum of
// file lengths) when preallocation makes them differ.
func diskCell(sr *SubjectResult) string {
	alloc := sr.Median(WorkloadIngest, DiskBytes)
	apparent := sr.Median(WorkloadIngest, ApparentBytes)
	if math.IsNaN(alloc) {
		return "–"
	}
	if math.IsNaN(apparent) || math.Abs(alloc-apparent) < 0.05*alloc {
		return bench.Bytes(int64(alloc))
	}
	return fmt.Sprintf("%s (files %s long)", bench.Bytes(int64(alloc)), bench.Bytes(int64(apparent)))
}

func taking(r *Results, workload string) []*SubjectResult {
	var out []*SubjectResult
	for _, s := range r.Subjects {
		if len(s.Of(workload)) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func appendSections(rep *bench.Report, r *Results) {
	raw, peb := r.Subject(RawName), r.Subject("pebble")
	for _, w := range r.Config.Writers {
		wl := AppendWorkload(w)
		s := rep.Section("Durable append, " + plural(w, "writer"))
		s.Para("%s, each appending one %d-byte record per batch and waiting for Sync before the next, for %v per repetition. Latency is Append+Sync as one writer sees it. Device WA is bytes the device wrote per payload byte.",
			plural(w, "concurrent writer"), r.Config.AppendRecordBytes, r.Config.AppendDuration)
		t := s.Table("subject", "records/s", "MB/s", "p50", "p99", "device WA", "× raw", "× pebble", "notes").Left(8)
		for _, sr := range taking(r, wl) {
			t.Row(sr.Name,
				cell(sr.Spread(wl, RecordsPerSecond), bench.Rate),
				cell(sr.Spread(wl, BytesPerSecond), mbps),
				cell(sr.Spread(wl, P50), bench.Millis),
				cell(sr.Spread(wl, P99), bench.Millis),
				cell(sr.Spread(wl, WriteAmplification), amp),
				ratioCell(sr, raw, wl), ratioCell(sr, peb, wl), failures(sr, wl))
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func ingestSection(rep *bench.Report, r *Results) {
	raw, peb := r.Subject(RawName), r.Subject("pebble")
	c := r.Config
	s := rep.Section("Bulk ingest")
	s.Para("%d records of %d bytes in batches of %d (one batch = %d bytes of Data), one Sync per batch, one writer. WA = bytes the device wrote from open to close / payload bytes; SA = bytes allocated on disk after close / payload bytes (preallocated space counts; the files' own length is shown when it differs).",
		c.Records, c.RecordBytes, c.BatchRecords, c.RecordBytes*c.BatchRecords)
	t := s.Table("subject", "records/s", "MB/s", "batch p99", "WA", "SA", "on disk", "× raw", "× pebble", "notes").Left(9)
	for _, sr := range taking(r, WorkloadIngest) {
		t.Row(sr.Name,
			cell(sr.Spread(WorkloadIngest, RecordsPerSecond), bench.Rate),
			cell(sr.Spread(WorkloadIngest, BytesPerSecond), mbps),
			cell(sr.Spread(WorkloadIngest, P99), bench.Millis),
			cell(sr.Spread(WorkloadIngest, WriteAmplification), amp),
			cell(sr.Spread(WorkloadIngest, SpaceAmplification), amp),
			diskCell(sr),
			ratioCell(sr, raw, WorkloadIngest), ratioCell(sr, peb, WorkloadIngest), failures(sr, WorkloadIngest))
	}
}

func readSection(rep *bench.Report, r *Results) {
	raw, peb := r.Subject(RawName), r.Subject("pebble")
	s := rep.Section("Sequential read")
	s.Para("The ingested log read back from its first offset to its end, %d bytes per read, after a clean close and a reopen, with the data evicted from the page cache; the cache column says how cold it really was. The raw baseline reads the plain file with read(2) in chunks of the same size into one reused buffer; an engine that implements engine.BufferReader (segment) is read the same way, the others return a new buffer per Read (the Go garbage collector then runs every few MiB, which costs a 2-core machine about a third of a cold scan).",
		scanMaxBytes)
	t := s.Table("subject", "records/s", "MB/s", "cache", "device read", "× raw", "× pebble", "notes").Left(3, 7)
	for _, sr := range taking(r, WorkloadRead) {
		t.Row(sr.Name,
			cell(sr.Spread(WorkloadRead, RecordsPerSecond), bench.Rate),
			cell(sr.Spread(WorkloadRead, BytesPerSecond), mbps),
			cacheCell(sr, WorkloadRead),
			bytesCell(sr.Median(WorkloadRead, DeviceReadBytes)),
			ratioCell(sr, raw, WorkloadRead), ratioCell(sr, peb, WorkloadRead), failures(sr, WorkloadRead))
	}
}

func reopenSection(rep *bench.Report, r *Results) {
	s := rep.Section("Reopen to first read")
	s.Para("After a clean close of the ingested log (%d records): the time from Open until the first record has been read, first with the log evicted from the page cache (cold), then again at once (warm).", r.Config.Records)
	t := s.Table("subject", "cold", "warm", "cache (cold run)", "device read (cold run)", "notes").Left(3, 5)
	for _, sr := range taking(r, WorkloadReopen) {
		notes := strings.TrimSpace(failures(sr, WorkloadReopen) + " " + failures(sr, WorkloadReopenWarm))
		t.Row(sr.Name,
			cell(sr.Spread(WorkloadReopen, Duration), bench.Millis),
			cell(sr.Spread(WorkloadReopenWarm, Duration), bench.Millis),
			cacheCell(sr, WorkloadReopen),
			bytesCell(sr.Median(WorkloadReopen, DeviceReadBytes)),
			notes)
	}
}

// cacheCell lists the distinct cache states of a workload's samples.
func cacheCell(sr *SubjectResult, workload string) string {
	var seen []string
	for _, s := range sr.Of(workload) {
		if s.Cache != "" && !contains(seen, s.Cache) {
			seen = append(seen, s.Cache)
		}
	}
	return strings.Join(seen, ", ")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func machineSection(rep *bench.Report, r *Results) {
	m := r.Machine
	s := rep.Section("Machine")
	items := []string{
		fmt.Sprintf("CPU: %d × %s", m.CPUs, orUnknown(m.CPUModel)),
		"memory: " + bench.Bytes(m.MemoryBytes),
		fmt.Sprintf("kernel: %s (%s/%s), %s", orUnknown(m.Kernel), m.OS, m.Arch, m.GoVersion),
		fmt.Sprintf("data directory: %s on %s, filesystem %s (%s), mounted at %s",
			m.Dir, orUnknown(m.MountSource), orUnknown(m.Filesystem), m.MountOptions, m.MountPoint),
		fmt.Sprintf("disk: %s (device %s), vendor %s, model %s, driver %s, %s, rotational flag %s, scheduler %s",
			orUnknown(m.Disk.Disk), orUnknown(m.Disk.Device), orUnknown(m.Disk.Vendor), orUnknown(m.Disk.Model), orUnknown(m.Disk.Driver),
			bench.Bytes(m.Disk.SizeBytes), orUnknown(m.Disk.Rotational), orUnknown(m.Disk.Scheduler)),
		fmt.Sprintf("load average: %s before, %s after", orUnknown(m.LoadAvg), orUnknown(r.LoadAfter)),
	}
	if b := r.Background; b != nil {
		items = append(items, fmt.Sprintf("background device writes before the run: %s in %.1f s (%.2f MB/s), counted in every WA figure too",
			bench.Bytes(b.WrittenBytes), b.Seconds, float64(b.WrittenBytes)/b.Seconds/1e6))
	}
	items = append(items, "page-cache eviction: "+r.CacheControl)
	if r.DeviceNote != "" {
		items = append(items, "device counters: "+r.DeviceNote)
	}
	s.List(items...)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
