package pebble

import (
	"context"
	"sync"
)

// groupSync makes concurrent Sync callers share WAL syncs (group commit).
// Waiters that arrive while a sync is running queue for the next one; one
// flusher goroutine runs syncs back to back while anyone waits, so n waiters
// cost about two fsyncs, not n. Pebble's WAL writer would merge concurrent
// syncs too, but each caller would still add a record to the WAL and block
// in pebble, where its context cannot end the wait.
type groupSync struct {
	// flush makes durable every batch appended before it is called and
	// returns the end offset it covers. A failed flush must leave the engine
	// with a sticky error: durability is never claimed after one.
	flush func() (covered int64, err error)

	mu      sync.Mutex
	durable int64  // every offset below it is durable
	epoch   uint64 // bumped when the log end moves down: an older flush covers nothing
	next    *syncRound
	running bool
}

// syncRound is one flush and the waiters it completes.
type syncRound struct {
	done    chan struct{}
	err     error
	waiters int // how many callers share it
}

// covered reports whether every offset below end is already durable.
func (g *groupSync) covered(end int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return end <= g.durable
}

// wait returns once every offset below end is durable, or the flush that
// should have made it so failed, or ctx ends.
func (g *groupSync) wait(ctx context.Context, end int64) error {
	g.mu.Lock()
	if end <= g.durable {
		g.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return err
	}
	r := g.next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		g.next = r
	}
	r.waiters++
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		if r.err != nil && g.covered(end) {
			// The flush failed (say, the engine closed) but another
			// completed flush, such as Close's own, covers us.
			return nil
		}
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run flushes while rounds are queued. A round closes to new waiters when it
// is taken, before its flush reads the end offset, so every waiter's batch is
// covered by it.
func (g *groupSync) run() {
	for {
		g.mu.Lock()
		r := g.next
		g.next = nil
		if r == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		epoch := g.epoch
		g.mu.Unlock()

		covered, err := g.flush()

		g.mu.Lock()
		if err == nil && epoch == g.epoch && covered > g.durable {
			g.durable = covered
		}
		g.mu.Unlock()
		r.err = err
		close(r.done)
	}
}

// advance records that every offset below end is durable (a write that
// synced the WAL itself, or Close).
func (g *groupSync) advance(end int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.durable = max(g.durable, end)
}

// reset records that the log now ends, durably, at end, which may be below
// the old end (Truncate). A flush in progress read the old end and must not
// raise durable past the new one.
func (g *groupSync) reset(end int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.durable = end
	g.epoch++
}
