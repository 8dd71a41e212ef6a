// Package matrix runs the end-to-end engine comparison, the quick and full
// profiles of cmd/bench: the
// same franz-go load against mini-kafka's broker over each storage engine,
// against franz-go's in-memory kfake (the protocol ceiling) and against
// NATS JetStream (another durable streaming server, driven by its own
// client), over a matrix of record sizes, concurrency, acks and sync
// policies; then a kill -9 recovery per engine. It measures; bench/report
// renders. (The engines' certification, their conformance and crash
// suites, runs in CI, not in the benchmark.)
//
// Every cell starts its server fresh, as a child process on an empty
// directory, so that the server's CPU (/proc/<pid>/stat), storage writes
// (/proc/<pid>/io), peak memory (VmHWM) and, for the broker, fsync count
// (/metrics) are its own. A cell warms up, then produces for the profile's
// duration with a closed-loop producer; some also read the tail while
// producing and then everything from the start after a restart with the
// page cache evicted. Repetitions interleave: every cell of a repetition
// runs before the next repetition, so a slow spell of the machine is spread
// over all targets.
//
// A cell that fails (a server that does not start, dies, or runs out of
// disk) records which phase failed and why, and the run goes on.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Config is one run.
type Config struct {
	Name    string
	Profile Profile
	// Points, when set, replaces Profile.Points() (tests run tiny matrices).
	Points  []Point
	Targets []Target
	// Dir is the parent of the servers' data directories.
	Dir string
	// Command and Setup are recorded in the run for the report, and so is
	// SyncInterval, the servers' fsync period under sync=interval.
	Command      string
	Setup        []string
	SyncInterval time.Duration
	// SkipRecovery leaves out the kill -9 recovery figures.
	SkipRecovery bool
	// DeliveryTimeout and Idle bound a phase whose server stopped
	// answering (defaults 15 s and 10 s).
	DeliveryTimeout time.Duration
	Idle            time.Duration
	// Log gets a line per cell; nil discards.
	Log io.Writer
	// Bar makes a progress bar for a long phase (the recovery data set).
	Bar func(what string, total int64) (progress func(int64), finish func())
}

// minFreeBytes: a cell does not start on a filesystem with less free space
// than this; it fails at once, saying so, rather than after its clients'
// timeouts.
const minFreeBytes = 64 << 20

type runner struct {
	cfg  Config
	run  *Run
	disk *bench.Disk // nil when the directory has no device counters
	n    int         // cells started
	all  int         // cells in the run
}

// Measure runs the matrix. It returns what it measured even when ctx ends
// early (Run.Interrupted says so); the error is for a run that could not
// start at all.
func Measure(ctx context.Context, cfg Config) (*Run, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg}
	r.run = &Run{Name: cfg.Name, Profile: cfg.Profile, Facts: bench.Begin(cfg.Dir, cfg.Command), Points: cfg.Points,
		SyncInterval: cfg.SyncInterval}
	r.run.Setup = cfg.Setup
	if d, err := bench.DiskFor(cfg.Dir); err == nil {
		r.disk = d
	} else {
		fmt.Fprintf(cfg.Log, "no device counters (write amplification from the servers' /proc/<pid>/io only): %v\n", err)
	}
	for _, t := range cfg.Targets {
		r.run.Targets = append(r.run.Targets, t.TargetInfo)
	}
	for _, p := range cfg.Points {
		for _, t := range cfg.Targets {
			if Applies(t.Name, t.Kind, p.Workload) {
				r.run.Cells = append(r.run.Cells, &Cell{Cell: bench.Cell[Rep]{Target: t.Name}, Kind: t.Kind, Workload: p.Workload})
			}
		}
	}
	r.all = len(r.run.Cells) * cfg.Profile.Reps
	err := r.phases(ctx)
	if err != nil {
		r.run.Interrupted = err.Error()
	}
	r.run.End()
	return r.run, nil
}

func (c *Config) defaults() error {
	if len(c.Targets) == 0 {
		return errors.New("matrix: no targets")
	}
	if c.Profile.Reps <= 0 || c.Profile.Duration <= 0 || c.Profile.Partitions <= 0 {
		return fmt.Errorf("matrix: profile %q needs repetitions, a duration and partitions", c.Profile.Name)
	}
	if c.Points == nil {
		c.Points = c.Profile.Points()
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 15 * time.Second
	}
	if c.Idle <= 0 {
		c.Idle = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Bar == nil {
		c.Bar = func(string, int64) (func(int64), func()) { return nil, func() {} }
	}
	for i := range c.Targets {
		if k, ok := c.Targets[i].Driver.(Kafka); ok {
			k.DeliveryTimeout, k.Idle = c.DeliveryTimeout, c.Idle
			c.Targets[i].Driver = k
		}
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	return nil
}

// phases runs the matrix and the recoveries, stopping at
// the first sign that ctx ended.
func (r *runner) phases(ctx context.Context) error {
	for rep := range r.cfg.Profile.Reps {
		for _, p := range r.cfg.Points {
			for _, t := range r.cfg.Targets {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				c := r.run.Cell(t.Name, p.Workload)
				if c == nil {
					continue
				}
				r.n++
				rp := r.cell(ctx, t, p, rep)
				c.Reps = append(c.Reps, rp)
				fmt.Fprintf(r.cfg.Log, "[%d/%d] rep %d %-8s %s: %s\n", r.n, r.all, rep+1, t.Name, p.Key(), summary(rp))
			}
		}
	}
	if r.cfg.SkipRecovery {
		return nil
	}
	return r.recoveries(ctx)
}

func summary(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	s := fmt.Sprintf("%s records/s, %s MB/s, p99 %s", bench.Rate(r.Produce.RecordsPerSec), bench.MB(r.Produce.MBPerSec*1e6),
		bench.Millis(r.Produce.Latency.P99.Seconds()))
	if r.Fsyncs >= 0 && r.Batches > 0 {
		s += fmt.Sprintf(", %.2f fsyncs/batch", float64(r.Fsyncs)/float64(r.Batches))
	}
	if r.CatchUp != nil {
		s += fmt.Sprintf(", catch-up %s records/s", bench.Rate(r.CatchUp.RecordsPerSec))
	}
	return s
}

// cellDir is a fresh data directory for one cell.
func (r *runner) cellDir(target, what string, rep int) (string, error) {
	dir := filepath.Join(r.cfg.Dir, fmt.Sprintf("%s-%s-%d", target, strings.ReplaceAll(what, "=", ""), rep))
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clean %s: %w", dir, err)
	}
	if err := checkSpace(r.cfg.Dir); err != nil {
		return "", err
	}
	return dir, nil
}
