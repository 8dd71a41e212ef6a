package logbench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Files the profile writes in its results directory.
const (
	ReportFile  = "engines.md"
	ResultsFile = "engines.json"
)

// Write writes engines.md and engines.json into dir.
func (r *Results) Write(dir string) error {
	return bench.WriteReport(dir, ReportFile, Report(r).Markdown(), ResultsFile, r)
}

// Load reads a run's engines.json (see Parse).
func Load(path string) (*Results, error) { return bench.Load(path, Parse) }

// Parse reads an engines.json; the targets are judged again from the
// samples, so that a change to them shows in a rendered report. Files
// written before the samples were filed in cells (by cmd/enginebench)
// hold them under each subject, and their date as "date".
func Parse(b []byte) (*Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	var legacy struct {
		Date     time.Time `json:"date"`
		Subjects []struct {
			Name    string   `json:"name"`
			Samples []Sample `json:"samples"`
		} `json:"subjects"`
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return nil, err
	}
	if len(r.Cells) == 0 {
		for _, s := range legacy.Subjects {
			for _, smp := range s.Samples {
				r.add(s.Name, smp)
			}
		}
	}
	if r.Started.IsZero() {
		r.Started = legacy.Date
	}
	r.Checks = Judge(&r)
	return &r, nil
}

// Report renders r as the markdown document results/engines.md holds.
// Every figure in it comes from r.
func Report(r *Results) *bench.Report {
	rep := &bench.Report{Title: "Engine benchmarks"}
	s := rep.Section("Run")
	s.List(
		fmt.Sprintf("%s, commit %s: `%s` (the machine and the disk are under Machine)", r.Started.UTC().Format("2006-01-02 15:04:05 MST"), r.Commit, r.Command),
		fmt.Sprintf("repetitions: %d per figure; tables show the median and [min–max]; ratios compare medians", r.Config.Reps),
		"subjects: "+subjectNotes(r),
	)
	if w := r.Busy(); w != "" {
		s.Para("**%s**", w)
	}
	targetSection(rep, r)
	methodSection(rep, r)
	appendSections(rep, r)
	ingestSection(rep, r)
	readSection(rep, r)
	readRepsSection(rep, r)
	reopenSection(rep, r)
	killSection(rep, r)
	trimSection(rep, r)
	catchUpSection(rep, r)
	machineSection(rep, r)
	return rep
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
	var lines []string
	for _, c := range r.Checks {
		lines = append(lines, c.String())
	}
	rep.Section("Targets").List(lines...)
}

func ratioCell(r *Results, subject, base, workload string) string {
	if subject == base || r.Subject(base) == nil {
		return "–"
	}
	return bench.Times(r.Median(subject, workload, RecordsPerSecond) / r.Median(base, workload, RecordsPerSecond))
}

// failures says how many repetitions of a workload failed, and the first
// error, so that a missing figure is explained in its row.
func failures(r *Results, subject, workload string) string {
	c := r.Cell(subject, workload)
	if c == nil {
		return ""
	}
	errs := c.Errors()
	if len(errs) == 0 {
		return ""
	}
	first := c.Reps[0].Err
	for _, s := range c.Reps {
		if s.Err != "" {
			first = s.Err
			break
		}
	}
	return fmt.Sprintf("%d/%d failed: %s", len(errs), len(c.Reps), first)
}

func amp(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func bytesCell(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return bench.Bytes(int64(v))
}

// diskCell is the median allocated size, with the apparent size (sum of
// file lengths) when preallocation makes them differ.
func diskCell(r *Results, subject string) string {
	alloc := r.Median(subject, WorkloadIngest, DiskBytes)
	apparent := r.Median(subject, WorkloadIngest, ApparentBytes)
	if math.IsNaN(alloc) {
		return "–"
	}
	if math.IsNaN(apparent) || math.Abs(alloc-apparent) < 0.05*alloc {
		return bench.Bytes(int64(alloc))
	}
	return fmt.Sprintf("%s (files %s long)", bench.Bytes(int64(alloc)), bench.Bytes(int64(apparent)))
}

// taking lists the subjects that ran workload, in report order.
func taking(r *Results, workload string) []string {
	var out []string
	for _, s := range r.Subjects {
		if r.Cell(s.Name, workload) != nil {
			out = append(out, s.Name)
		}
	}
	return out
}

func appendSections(rep *bench.Report, r *Results) {
	for _, w := range r.Config.Writers {
		wl := AppendWorkload(w)
		s := rep.Section("Durable append, " + plural(w, "writer"))
		s.Para("%s, each appending one %d-byte record per batch and waiting for Sync before the next, for %v per repetition. Latency is Append+Sync as one writer sees it. Device WA is bytes the device wrote per payload byte.",
			plural(w, "concurrent writer"), r.Config.AppendRecordBytes, r.Config.AppendDuration)
		t := s.Table("subject", "records/s", "MB/s", "p50", "p99", "device WA", "× raw", "× raw-overwrite", "× pebble", "notes").Left(9)
		for _, n := range taking(r, wl) {
			sp := func(m Metric, f func(float64) string) string { return bench.SpreadText(r.Spread(n, wl, m), f) }
			t.Row(n, sp(RecordsPerSecond, bench.Rate), sp(BytesPerSecond, bench.MB), sp(P50, bench.Millis), sp(P99, bench.Millis),
				sp(WriteAmplification, amp), ratioCell(r, n, RawName, wl), ratioCell(r, n, RawOverwriteName, wl),
				ratioCell(r, n, "pebble", wl), failures(r, n, wl))
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
	c := r.Config
	s := rep.Section("Bulk ingest")
	s.Para("%d records of %d bytes in batches of %d (one batch = %d bytes of Data), one Sync per batch, one writer. WA = bytes the device wrote from open to close / payload bytes; SA = bytes allocated on disk after close / payload bytes (preallocated space counts; the files' own length is shown when it differs).",
		c.Records, c.RecordBytes, c.BatchRecords, c.RecordBytes*c.BatchRecords)
	t := s.Table("subject", "records/s", "MB/s", "batch p99", "WA", "SA", "on disk", "× raw", "× raw-overwrite", "× pebble", "notes").Left(10)
	wl := WorkloadIngest
	for _, n := range taking(r, wl) {
		sp := func(m Metric, f func(float64) string) string { return bench.SpreadText(r.Spread(n, wl, m), f) }
		t.Row(n, sp(RecordsPerSecond, bench.Rate), sp(BytesPerSecond, bench.MB), sp(P99, bench.Millis),
			sp(WriteAmplification, amp), sp(SpaceAmplification, amp), diskCell(r, n),
			ratioCell(r, n, RawName, wl), ratioCell(r, n, RawOverwriteName, wl), ratioCell(r, n, "pebble", wl), failures(r, n, wl))
	}
}

func readSection(rep *bench.Report, r *Results) {
	s := rep.Section("Sequential read")
	wl := WorkloadRead
	var lend, own []string
	for _, n := range taking(r, wl) {
		if n == RawName {
			continue
		}
		switch lent(r, n) {
		case "yes":
			lend = append(lend, n)
		case "no":
			own = append(own, n)
		}
	}
	s.Para("The ingested log read back from its first offset to its end, %d bytes per read, after a clean close and a reopen, with the data evicted from the page cache; the cache column says how cold it really was. The raw baseline reads the plain file with read(2) in chunks of the same size into one reused buffer; %s. A new buffer per Read makes the Go garbage collector run every few MiB, which on this machine's %s is a visible share of a cold scan.",
		scanMaxBytes, lendText(lend, own), r.Cores())
	t := s.Table("subject", "records/s", "MB/s", "cache", "device read", "× raw", "× pebble", "notes").Left(3, 7)
	for _, n := range taking(r, wl) {
		t.Row(n, bench.SpreadText(r.Spread(n, wl, RecordsPerSecond), bench.Rate), bench.SpreadText(r.Spread(n, wl, BytesPerSecond), bench.MB),
			cacheCell(r, n, wl), bytesCell(r.Median(n, wl, DeviceReadBytes)),
			ratioCell(r, n, RawName, wl), ratioCell(r, n, "pebble", wl), failures(r, n, wl))
	}
}

// lent says whether the subject's reads reused a lent buffer: "yes", "no",
// or "" when it has no finished read.
func lent(r *Results, subject string) string {
	out := ""
	for _, s := range r.Samples(subject, WorkloadRead) {
		switch {
		case s.Err != "":
		case s.Lent:
			out = "yes"
		default:
			return "no"
		}
	}
	return out
}

func lendText(lend, own []string) string {
	var parts []string
	if len(lend) > 0 {
		parts = append(parts, strings.Join(lend, ", ")+" (engine.BufferReader) are read the same way")
	}
	if len(own) > 0 {
		parts = append(parts, strings.Join(own, ", ")+" return a new buffer per Read")
	}
	if len(parts) == 0 {
		return "no engine read finished"
	}
	return strings.Join(parts, "; ")
}

func reopenSection(rep *bench.Report, r *Results) {
	s := rep.Section("Reopen to first read")
	s.Para("After a clean close of the ingested log (%d records): the time from Open until the first record has been read, first with the log evicted from the page cache (cold), then again at once (warm).", r.Config.Records)
	t := s.Table("subject", "cold", "warm", "cache (cold run)", "device read (cold run)", "notes").Left(3, 5)
	for _, n := range taking(r, WorkloadReopen) {
		notes := strings.TrimSpace(failures(r, n, WorkloadReopen) + " " + failures(r, n, WorkloadReopenWarm))
		t.Row(n, bench.SpreadText(r.Spread(n, WorkloadReopen, Duration), bench.Millis),
			bench.SpreadText(r.Spread(n, WorkloadReopenWarm, Duration), bench.Millis),
			cacheCell(r, n, WorkloadReopen), bytesCell(r.Median(n, WorkloadReopen, DeviceReadBytes)), notes)
	}
}

// cacheCell lists the distinct cache states of a workload's samples.
func cacheCell(r *Results, subject, workload string) string {
	var seen []string
	for _, s := range r.Samples(subject, workload) {
		if s.Cache != "" && !slices.Contains(seen, s.Cache) {
			seen = append(seen, s.Cache)
		}
	}
	return strings.Join(seen, ", ")
}

func machineSection(rep *bench.Report, r *Results) {
	items := r.List()
	if b := r.Background; b != nil {
		items = append(items, fmt.Sprintf("background device writes before the run: %s in %.1f s (%.2f MB/s), counted in every WA figure too",
			bench.Bytes(b.WrittenBytes), b.Seconds, float64(b.WrittenBytes)/b.Seconds/1e6))
	}
	items = append(items, "page-cache eviction: "+r.CacheControl)
	if r.DeviceNote != "" {
		items = append(items, "device counters: "+r.DeviceNote)
	}
	rep.Section("Machine").List(items...)
}
