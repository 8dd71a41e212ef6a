// Package bench holds what every benchmark profile of cmd/bench shares.
//
// The data model: a run's Facts (machine, disk, load average, commit,
// command, setup), its Cells (one target under one workload on one
// Topology, over its repetitions, each a profile's own Rep type), a
// Spread of a figure over the repetitions, a cell's Errors, the profile's
// Checks (a figure against a bound) and the Ratios the regression check
// compares between runs. Topology is one broker for most profiles; the
// cluster and replication profiles set its brokers, replication factor
// and faults.
//
// The measuring tools: a latency recorder (HdrHistogram), quantiles of a
// figure measured many times with their confidence intervals, device I/O
// counters, page-cache control, directory usage, seeded payloads, and the
// markdown and JSON writers. Workloads are data (bench/workloads), run by
// bench/runner into bench/result's schema; the profiles not yet moved are
// a subpackage each (logbench, faults, matrix).
//
// Nothing here asserts a duration: benchmarks report, tests check plumbing.
package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency bounds: 1 µs to 10 minutes at 3 significant digits, which covers a
// page-cache hit and a stalled fsync alike without clamping either.
const (
	latencyLowest  = int64(time.Microsecond)
	latencyHighest = int64(10 * time.Minute)
	latencySigFigs = 3
)

// Latency records durations into an HdrHistogram. Record is safe for
// concurrent use; for hot loops with many goroutines give each goroutine its
// own Latency and Merge them afterwards, which keeps the lock uncontended.
type Latency struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// NewLatency returns an empty recorder.
func NewLatency() *Latency {
	return &Latency{h: hdrhistogram.New(latencyLowest, latencyHighest, latencySigFigs)}
}

// Record adds one observation. Values outside the trackable range are clamped
// to it, so an observation is never silently dropped.
func (l *Latency) Record(d time.Duration) {
	v := int64(d)
	v = max(v, latencyLowest)
	v = min(v, latencyHighest)
	l.mu.Lock()
	// RecordValue fails only outside the range, which the clamp excludes.
	_ = l.h.RecordValue(v)
	l.mu.Unlock()
}

// Merge adds every observation of o into l.
func (l *Latency) Merge(o *Latency) {
	o.mu.Lock()
	c := o.h.Export()
	o.mu.Unlock()
	l.mu.Lock()
	l.h.Merge(hdrhistogram.Import(c))
	l.mu.Unlock()
}

// Count is the number of observations.
func (l *Latency) Count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.TotalCount()
}

// Quantile returns the value at percentile p (0 to 100), or 0 when nothing
// was recorded.
func (l *Latency) Quantile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.h.ValueAtQuantile(p))
}

// Max returns the largest observation (to the histogram's precision).
func (l *Latency) Max() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.h.Max())
}

// Summary is the usual digest of a Latency.
type Summary struct {
	Count int64         `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summary digests l.
func (l *Latency) Summary() Summary {
	return Summary{
		Count: l.Count(),
		P50:   l.Quantile(50),
		P99:   l.Quantile(99),
		P999:  l.Quantile(99.9),
		Max:   l.Max(),
	}
}

func (s Summary) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v p99.9=%v max=%v", s.Count, s.P50, s.P99, s.P999, s.Max)
}
