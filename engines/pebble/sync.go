package pebble

import (
	"context"
	"sync"
)

// groupSync makes concurrent Sync callers, of every log of a database,
// share WAL syncs (group commit). Writes are numbered in WAL order (a
// write's sequence is taken once pebble has it in the WAL); a flush covers
// every write numbered before it began. Waiters that arrive while a flush
// is running queue for the next one; one flusher goroutine runs flushes
// back to back while anyone waits, so n waiters cost about two fsyncs, not
// n. Pebble's WAL writer would merge concurrent syncs too, but each caller
// would still add a record to the WAL and block in pebble, where its
// context cannot end the wait.
type groupSync struct {
	// flush makes durable every write numbered before it is called and
	// returns the sequence it covers. A failed flush must leave the
	// database with a sticky error: durability is never claimed after one.
	flush func() (covered uint64, err error)

	mu      sync.Mutex
	durable uint64 // every write numbered at or below it is durable
	next    *syncRound
	running bool
}

// syncRound is one flush and the waiters it completes.
type syncRound struct {
	done    chan struct{}
	err     error
	waiters int // how many callers share it
}

// covered reports whether write seq is already durable.
func (g *groupSync) covered(seq uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return seq <= g.durable
}

// wait returns once write seq is durable, or the flush that should have
// made it so failed, or ctx ends.
func (g *groupSync) wait(ctx context.Context, seq uint64) error {
	g.mu.Lock()
	if seq <= g.durable {
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
		if r.err != nil && g.covered(seq) {
			// The flush failed (say, the database closed) but another
			// completed write, such as Close's own, covers us.
			return nil
		}
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run flushes while rounds are queued. A round closes to new waiters when
// it is taken, before its flush reads the sequence, so every waiter's
// write is covered by it.
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
		g.mu.Unlock()
		covered, err := g.flush()
		if err == nil {
			g.advance(covered)
		}
		r.err = err
		close(r.done)
	}
}

// advance records that every write numbered at or below seq is durable (a
// write that synced the WAL itself, or Close).
func (g *groupSync) advance(seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.durable = max(g.durable, seq)
}
