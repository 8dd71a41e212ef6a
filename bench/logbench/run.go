package logbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/engine"
)

// Config is one benchmark run. Default and Quick give the two usual ones.
type Config struct {
	// Subjects names what to measure: registered engines and the baselines
	// RawName, RawOverwriteName and BadgerTxnName. Empty means all of them.
	Subjects []string `json:"subjects"`
	// Reps is how many times each figure is measured.
	Reps int `json:"reps"`

	// Writers are the concurrency levels of durable append.
	Writers []int `json:"writers"`
	// AppendRecordBytes is the record size of durable append.
	AppendRecordBytes int `json:"append_record_bytes"`
	// AppendDuration is how long each durable-append figure runs.
	AppendDuration time.Duration `json:"append_duration_ns"`

	// Records, RecordBytes and BatchRecords shape the bulk ingest, which the
	// read and reopen figures then read back.
	Records      int64 `json:"records"`
	RecordBytes  int   `json:"record_bytes"`
	BatchRecords int   `json:"batch_records"`

	// Dir is where a scratch directory for the data is made; empty means the
	// system's temporary directory. What filesystem and disk hold it is part
	// of the results.
	Dir string `json:"dir"`
	// Probe is how long the device's background writes are measured before
	// the run, to show how quiet the machine was. Zero skips it.
	Probe time.Duration `json:"probe_ns"`
	// Self is a program that serves ChildCmd (the benchmark's own binary),
	// for the restart after kill -9; empty skips that workload.
	Self string `json:"-"`
	// Bar, if not nil, draws the run's progress.
	Bar bench.Bar `json:"-"`
	// Command is the command line, for the report.
	Command string `json:"-"`
}

// Default is the shape of the full run that results/engines.md comes from,
// with a smaller ingest (see ProfileRecords).
func Default() Config {
	return Config{
		Reps:              3,
		Writers:           []int{1, 256},
		AppendRecordBytes: 1024,
		AppendDuration:    5 * time.Second,
		Records:           1_000_000,

		RecordBytes:  100,
		BatchRecords: 1000,
		Probe:        3 * time.Second,
	}
}

// ProfileRecords is the engines profile's bulk ingest: a GiB of 100-byte
// records, so that the cold read, the restarts after a kill and the
// truncations run on a log of the size the targets name. (Default keeps a
// smaller ingest, which the replication profile takes as its baseline.)
const ProfileRecords = 10_738_000

// Quick is a smoke run of the same pipeline on small sizes.
func Quick() Config {
	c := Default()
	c.Reps = 1
	c.AppendDuration = 100 * time.Millisecond
	c.Records = 20_000
	c.Probe = 0
	return c
}

// AllSubjects lists every subject that can be measured: the registered
// engines and the baselines, in report order.
func AllSubjects() []string {
	names := append(engine.Names(), RawName, RawOverwriteName, SegmentRetainedName, BadgerTxnName)
	slices.SortStableFunc(names, func(a, b string) int { return subjectRank(a) - subjectRank(b) })
	return names
}

// subjectRank orders the report: the disk's limit first, then the engines
// the targets compare, then the rest.
func subjectRank(name string) int {
	if i := slices.Index([]string{RawName, RawOverwriteName, "segment", SegmentRetainedName, "pebble", "badger", BadgerTxnName, "memory"}, name); i >= 0 {
		return i
	}
	return 100
}

// Results is everything a run measured, and where and how.
type Results struct {
	bench.Facts
	Config Config `json:"config"`
	// Background is what the device wrote during Config.Probe before the run
	// (nil without a probe or device counters).
	Background *Background `json:"background,omitempty"`
	DeviceNote string      `json:"device_note,omitempty"`
	// CacheControl is how the run evicts data from the page cache.
	CacheControl string        `json:"cache_control"`
	Subjects     []SubjectInfo `json:"subjects"`
	// Cells hold the samples, a cell per subject and workload.
	Cells []*Cell `json:"cells"`
}

// Background is the device's activity while nothing of ours ran.
type Background struct {
	Seconds      float64 `json:"seconds"`
	WrittenBytes int64   `json:"written_bytes"`
}

// SubjectInfo says what a subject of the run is.
type SubjectInfo struct {
	Name    string `json:"name"`
	Note    string `json:"note"`
	Durable bool   `json:"durable"`
}

// Cell is one subject under one workload, over the repetitions.
type Cell = bench.Cell[Sample]

// Cell returns the subject's cell under workload, or nil.
func (r *Results) Cell(subject, workload string) *Cell {
	for _, c := range r.Cells {
		if c.Target == subject && c.Workload == workload {
			return c
		}
	}
	return nil
}

// add files a sample in its cell.
func (r *Results) add(subject string, s Sample) {
	c := r.Cell(subject, s.Workload)
	if c == nil {
		c = &Cell{Target: subject, Workload: s.Workload}
		r.Cells = append(r.Cells, c)
	}
	c.Reps = append(c.Reps, s)
}

// Run measures every subject of c, repetition by repetition (each repetition
// visits every subject, so a slow spell of a shared machine spreads over
// all of them instead of landing on one). A failing workload is recorded in
// its Sample and the run goes on; Run fails only when it cannot run at all.
func Run(c Config) (*Results, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	subjects, err := c.subjects()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(c.Dir, "engines-")
	if err != nil {
		return nil, fmt.Errorf("logbench: scratch directory: %w", err)
	}
	defer os.RemoveAll(root)

	r := &runner{cfg: c, root: root, payload: bench.NewPayload(1, 8<<20)}
	res := &Results{Facts: bench.Begin(root, c.Command), Config: c, CacheControl: bench.CacheControl()}
	if r.disk, err = bench.DiskFor(root); err != nil {
		res.DeviceNote = err.Error()
	}
	res.Background = r.probe()
	finish := func() {}
	if c.Bar != nil {
		steps := 0
		for _, s := range subjects {
			steps += r.steps(s)
		}
		r.progress, finish = c.Bar("engines", int64(steps*c.Reps))
	}
	for _, s := range subjects {
		res.Subjects = append(res.Subjects, SubjectInfo{Name: s.Name, Note: s.Note, Durable: s.Durable})
	}
	for rep := 1; rep <= c.Reps; rep++ {
		for _, s := range subjects {
			for _, smp := range r.rep(s, rep) {
				res.add(s.Name, smp)
			}
		}
	}
	finish()
	res.End()
	return res, nil
}

func (c Config) validate() error {
	switch {
	case c.Reps < 1:
		return fmt.Errorf("logbench: reps %d, want at least 1", c.Reps)
	case c.AppendRecordBytes < 1 || c.RecordBytes < 1 || c.BatchRecords < 1:
		return fmt.Errorf("logbench: record sizes and batch size must be positive")
	case c.Records < 1:
		return fmt.Errorf("logbench: records %d, want at least 1", c.Records)
	case int64(c.RecordBytes)*int64(c.BatchRecords) < stampBytes:
		return fmt.Errorf("logbench: a batch must hold at least %d bytes", stampBytes)
	}
	for _, w := range c.Writers {
		if w < 1 {
			return fmt.Errorf("logbench: writers %d, want at least 1", w)
		}
	}
	return nil
}

func (c Config) subjects() ([]Subject, error) {
	names := c.Subjects
	if len(names) == 0 {
		names = AllSubjects()
	}
	var out []Subject
	var errs []error
	for _, n := range names {
		switch n {
		case RawName:
			out = append(out, RawSubject(c.RecordBytes))
		case RawOverwriteName:
			out = append(out, RawOverwriteSubject())
		case BadgerTxnName:
			out = append(out, BadgerTxnSubject())
		case SegmentRetainedName:
			out = append(out, SegmentRetainedSubject(engine.DefaultSegmentBytes))
		default:
			s, err := EngineSubject(n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("logbench: %w", err)
	}
	slices.SortStableFunc(out, func(a, b Subject) int { return subjectRank(a.Name) - subjectRank(b.Name) })
	return out, nil
}

func (r *runner) probe() *Background {
	if r.cfg.Probe <= 0 || r.disk == nil {
		return nil
	}
	before, err := r.disk.Stats()
	if err != nil {
		return nil
	}
	start := time.Now()
	// A benchmark command waiting out its measurement window, not a test.
	time.Sleep(r.cfg.Probe)
	after, err := r.disk.Stats()
	if err != nil {
		return nil
	}
	return &Background{Seconds: time.Since(start).Seconds(), WrittenBytes: after.Sub(before).WrittenBytes}
}

// scratch returns a fresh directory for one workload.
func (r *runner) scratch(subject, workload string, rep int) string {
	return filepath.Join(r.root, fmt.Sprintf("%s-%s-%d", subject, workload, rep))
}
