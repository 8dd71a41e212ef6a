package broker

import (
	"context"
	"sync"
)

// budget bounds the bytes of requests held in memory across all connections
// at once (Kafka's queued.max.request.bytes): a reader acquires a frame's
// length before reading its body and the connection releases it once the
// response is written. A single frame larger than the whole budget is let in
// when nothing else holds any, so the budget can never deadlock a client that
// respects the frame-size limit.
type budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiters []*budgetWaiter // FIFO, so a large frame is not starved by small ones
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(limit int64) *budget { return &budget{limit: limit} }

// acquire takes n bytes, waiting until they are free or ctx ends.
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready:
			// Granted while we gave up: hand it back.
			b.used -= n
			b.wakeLocked()
		default:
			for i, o := range b.waiters {
				if o == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			b.wakeLocked()
		}
		return ctx.Err()
	}
}

func (b *budget) fits(n int64) bool { return b.used+n <= b.limit || b.used == 0 }

// force takes n bytes without waiting, even past the limit: for what is
// already in memory (a first batch larger than a fetch's limits).
func (b *budget) force(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += n
}

// release returns n bytes taken by acquire or force.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("broker: budget released more than acquired")
	}
	b.wakeLocked()
}

func (b *budget) wakeLocked() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n) {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse reports the bytes held (for metrics and tests).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
