package segment

import (
	"context"
	"sync"
	"time"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

// syncRound is one fsync shared by every Sync that joined it before it
// started. err is set before done is closed.
type syncRound struct {
	done    chan struct{}
	err     error
	waiters int // how many Syncs joined; guarded by syncState.mu
}

// syncState is the group-commit queue.
type syncState struct {
	mu      sync.Mutex
	synced  int64      // every offset below is durable
	written int64      // every offset below is in the OS's hands (survives a process crash)
	next    *syncRound // the syncing round the flusher starts next; nil when nobody waits
	// nextWrite is the round a Sync under SyncInterval or SyncNever waits
	// for: one that writes the tail without syncing it.
	nextWrite *syncRound
	closed    bool // Close completed the last round

	// meter reports sync rounds to Options.Observer (nil: nobody listens).
	// Set before the flusher starts; Append counts into it under the append
	// lock, and a round's snapshot, taken under the same lock, begins a
	// SyncRound. A round is reported when it syncs the active segment (it
	// then covers every append of its snapshot), or when its I/O fails; a
	// write-behind round, which syncs at most sealed segments, is folded
	// into the next round that syncs the active one.
	meter *engine.SyncMeter
}

// Sync implements engine.LogEngine.
//
// Group commit: a waiter joins the next round and kicks the flusher. A round
// starts by taking the queued waiters and then the log end: every waiter in
// it asked for an end that was already written, so the round's fsyncs cover
// it. Waiters that arrive while a round syncs join the round after it.
// Under SyncInterval and SyncNever a waiter asks only that the round write
// the frames to the file, which every round does.
func (e *Engine) Sync(ctx context.Context, end int64) error {
	e.sm.mu.Lock()
	if e.sm.closed {
		e.sm.mu.Unlock()
		return engine.ErrClosed
	}
	if err := e.failed(); err != nil {
		e.sm.mu.Unlock()
		return err
	}
	always := e.opts.Sync == engine.SyncAlways
	done := e.sm.written
	if always {
		done = e.sm.synced
	}
	if done >= min(end, e.end.Load()) {
		e.sm.mu.Unlock()
		return nil
	}
	if e.opts.Inline {
		e.sm.mu.Unlock()
		e.flushRound(always)
		return e.failed()
	}
	next := &e.sm.next
	if !always {
		next = &e.sm.nextWrite
	}
	r := *next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		*next = r
	}
	r.waiters++
	e.sm.mu.Unlock()
	e.kickFlusher()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush implements engine.Flusher: one round of the flusher, on the
// caller's goroutine, that writes and syncs everything appended before it.
// It is how an engine opened Inline flushes under SyncInterval; any engine
// may be flushed so.
func (e *Engine) Flush() error {
	if e.closed.Load() {
		return engine.ErrClosed
	}
	e.flushRound(true)
	return e.failed()
}

func (e *Engine) kickFlusher() {
	if e.opts.Inline {
		return // nobody to kick: the caller's Sync or Flush writes
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// flushLoop is the flusher goroutine. It runs a round when kicked (a Sync
// waiter, a roll) and, under SyncInterval, every SyncInterval of the
// engine's clock.
func (e *Engine) flushLoop(t clock.Timer) {
	defer close(e.flusherDone)
	var tick <-chan time.Time // nil, so never ready, unless SyncInterval
	if t != nil {
		defer t.Stop()
		tick = t.C()
	}
	for {
		select {
		case <-e.quit:
			return
		case <-e.kick:
			e.flushRound(false)
		case <-tick:
			e.flushRound(true)
			t.Reset(e.opts.SyncInterval)
		}
	}
}

// startFlusher starts the flusher goroutine. The SyncInterval timer is made
// here, before Open returns, so that the first interval counts from Open on
// the engine's clock.
func (e *Engine) startFlusher() {
	e.sm.meter = engine.NewSyncMeter(e.opts)
	if e.opts.Inline {
		close(e.flusherDone) // no flusher: Close has none to wait for
		return
	}
	var t clock.Timer
	if e.opts.Sync == engine.SyncInterval {
		t = e.opts.Clock.NewTimer(e.opts.SyncInterval)
	}
	go e.flushLoop(t)
}

// flushRound writes and syncs what the round needs: rolled segments (then
// their directory entry), the active segment's tail (synced when someone
// waits or all is set), then releases the waiters and writes the sealed
// segments' indexes. Appends go on meanwhile: the append lock is held only
// to take the snapshot.
func (e *Engine) flushRound(all bool) {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	if e.closed.Load() {
		return // Close runs the last round itself
	}
	e.sm.mu.Lock()
	r, w := e.sm.next, e.sm.nextWrite
	e.sm.next, e.sm.nextWrite = nil, nil
	e.sm.mu.Unlock()

	e.mu.Lock()
	target := e.end.Load()
	seals := e.sealing
	e.sealing = nil
	active := e.active
	targetPos := active.endPos.Load()
	dirDirty := e.dirDirty
	e.dirDirty = false
	round := e.sm.meter.Begin() // covers every append below target
	e.mu.Unlock()

	syncActive := all || r != nil
	prior := e.failed()
	err := prior
	if err == nil {
		from := active.written.Load()
		err = e.syncFiles(seals, dirDirty, active, syncActive)
		if err == nil && !syncActive && e.opts.Sync != engine.SyncAlways {
			// Under SyncInterval and SyncNever the next fdatasync may be an
			// interval away, and a Sync waiting for a write round waits
			// behind it: start the writeback now so that it is short.
			err = startWriteback(active.f, from, active.written.Load()-from)
		}
	}
	// Reported before any waiter is released (and before synced moves, which
	// a Sync reads without waiting), so that a Sync that returns has been
	// counted; an earlier failure was reported by the round that met it.
	if prior == nil && (syncActive || err != nil) {
		round.End(err)
	}
	if err != nil {
		e.fail(err) // before any waiter hears of it: it is sticky from here
	} else {
		e.sm.mu.Lock()
		e.sm.written = max(e.sm.written, target)
		if syncActive {
			e.sm.synced = max(e.sm.synced, target)
		}
		e.sm.mu.Unlock()
	}
	for _, r := range []*syncRound{r, w} {
		if r != nil {
			r.err = err
			close(r.done)
		}
	}
	if err == nil {
		err = e.sealIndexes(seals)
	}
	if err == nil && syncActive && targetPos-active.ckpt.endPos >= e.ckptBytes.Load() {
		err = active.checkpoint(target, targetPos)
	}
	if err != nil {
		e.fail(err)
	}
}

// sealIndexes writes the sealed indexes of rolled segments whose data is
// durable, and removes their checkpoints, which the index supersedes. The
// caller holds flushMu.
func (e *Engine) sealIndexes(seals []*segment) error {
	for _, s := range seals {
		if err := s.writeIndex(true, indexLazy); err != nil {
			return err
		}
		if err := s.dropCheckpoint(); err != nil {
			return err
		}
	}
	return nil
}

// syncFiles writes the segments' unwritten tails and makes durable, in
// this order: the sealed segments, the directory, the active segment (only
// written, not synced, unless syncActive). A sealed segment is thus durable
// before (or with) the segment that follows it, and a segment file's
// directory entry before any waiter counts on its data.
func (e *Engine) syncFiles(seals []*segment, dirDirty bool, active *segment, syncActive bool) error {
	for _, s := range seals {
		if err := s.flush(true); err != nil {
			return err
		}
		s.dropSpare()
	}
	if dirDirty {
		if err := engine.SyncDir(e.fs, e.dir); err != nil {
			return err
		}
	}
	return active.flush(syncActive)
}

// syncAllLocked makes everything appended durable and writes the pending
// sealed indexes, outside the flusher (Close, Truncate). The caller holds
// flushMu and mu.
func (e *Engine) syncAllLocked() error {
	seals := e.sealing
	round := e.sm.meter.Begin() // mu is held: no append can slip past it
	err := e.syncFiles(seals, e.dirDirty, e.active, true)
	round.End(err)
	if err != nil {
		return e.fail(err)
	}
	e.sealing = nil
	e.dirDirty = false
	if err := e.sealIndexes(seals); err != nil {
		return e.fail(err)
	}
	e.setSynced(e.end.Load())
	return nil
}

// setSynced records that every offset below end is durable, and that the
// log holds no append that a round has yet to report: the caller has just
// synced and reported everything (syncAllLocked), or the log now ends at end
// with whatever was unsynced cut away (a Truncate), so the meter forgets
// what no event counted.
func (e *Engine) setSynced(end int64) {
	e.sm.meter.Forget()
	e.sm.mu.Lock()
	e.sm.synced, e.sm.written = end, end
	e.sm.mu.Unlock()
}

// completeWaiters ends the queued round with err; final makes every later
// Sync return ErrClosed.
func (e *Engine) completeWaiters(err error, final bool) {
	e.sm.mu.Lock()
	r, w := e.sm.next, e.sm.nextWrite
	e.sm.next, e.sm.nextWrite = nil, nil
	if final {
		e.sm.closed = true
	}
	e.sm.mu.Unlock()
	for _, r := range []*syncRound{r, w} {
		if r != nil {
			r.err = err
			close(r.done)
		}
	}
}
