package node

import (
	"math"
	"sync"
	"time"
)

// Quota measures bytes per second over the last QuotaWindow against a
// limit, as Kafka's replication quota does (a rate of a few samples): a
// throttled copy runs while the window is under the limit and waits while
// it is over, so over any window it copies at most about the limit plus
// one fetch. Safe for concurrent use.
type Quota struct {
	mu    sync.Mutex
	limit int64 // bytes per second; math.MaxInt64: none
	// samples are the bytes recorded in each QuotaWindow/quotaSamples of
	// the window, by the sample's start.
	samples [quotaSamples]quotaSample
}

type quotaSample struct {
	start time.Time
	bytes int64
}

const (
	// QuotaWindow is the span the rate is measured over.
	QuotaWindow  = time.Second
	quotaSamples = 10
	sampleSpan   = QuotaWindow / quotaSamples
)

// NewQuota returns a quota without a limit.
func NewQuota() *Quota { return &Quota{limit: math.MaxInt64} }

// SetLimit sets the limit in bytes per second (math.MaxInt64: none).
func (q *Quota) SetLimit(bytesPerSec int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limit = bytesPerSec
}

// Limited reports whether a limit is set.
func (q *Quota) Limited() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit != math.MaxInt64
}

// Record counts n bytes copied at now.
func (q *Quota) Record(now time.Time, n int) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	start := now.Truncate(sampleSpan)
	s := &q.samples[start.UnixNano()/int64(sampleSpan)%quotaSamples]
	if !s.start.Equal(start) {
		*s = quotaSample{start: start}
	}
	s.bytes += int64(n)
}

// Allowance is how many more bytes the window that ends at now allows:
// math.MaxInt64 without a limit, zero or less when the quota is exceeded.
// A throttled copy asks for at most this much (but always for one batch).
func (q *Quota) Allowance(now time.Time) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.limit == math.MaxInt64 {
		return math.MaxInt64
	}
	var sum int64
	for _, s := range q.samples {
		if age := now.Sub(s.start); age >= 0 && age < QuotaWindow {
			sum += s.bytes
		}
	}
	allowed := int64(min(float64(q.limit)*QuotaWindow.Seconds(), math.MaxInt64/2))
	return allowed - sum
}

// Exceeded reports whether the window that ends at now allows no more.
func (q *Quota) Exceeded(now time.Time) bool { return q.Allowance(now) <= 0 }
