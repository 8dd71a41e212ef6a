package badger

import (
	"errors"
	"fmt"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engines/kvlog"
)

const (
	// pendingFlushBytes wakes the flusher whatever the policy: it bounds what
	// a process crash can lose under SyncNever and SyncInterval.
	pendingFlushBytes = 4 << 20
	// pendingMaxBytes makes Append wait for the flusher (backpressure).
	pendingMaxBytes = 64 << 20
	// gcInterval is how often value log garbage collection runs.
	gcInterval = time.Minute
	// gcDiscardRatio: a value log file is rewritten once half of it is garbage.
	gcDiscardRatio = 0.5
)

// wake makes the flusher run a round soon; rounds coalesce.
func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// flushLoop is the group commit: each round commits everything pending.
func (e *Engine) flushLoop() {
	defer e.workers.Done()
	for {
		select {
		case <-e.stop:
			return
		case <-e.kick:
		}
		e.flushMu.Lock()
		_ = e.flushLocked() // a failure is sticky and reported to every caller
		e.flushMu.Unlock()
	}
}

// flushLocked commits every pending batch to Badger and, the commits being
// synced, makes them durable. The caller holds flushMu.
func (e *Engine) flushLocked() error {
	e.mu.Lock()
	if e.failed != nil {
		defer e.mu.Unlock()
		return e.stickyLocked()
	}
	batch := e.pending
	round := e.meter.Begin() // under mu: it counts exactly the batches taken
	e.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := e.commit(func(put func(key, value []byte) error) error {
		for _, p := range batch {
			if err := put(e.sp.BatchKey(p.base), p.value); err != nil {
				return err
			}
		}
		return nil
	})
	// Reported before the waiters hear of the new durable end, so that a
	// Sync that returns has been counted.
	round.End(err)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.failLocked(fmt.Errorf("commit [%d, %d): %w", batch[0].base, batch[len(batch)-1].next(), err))
		return e.stickyLocked()
	}
	// Only the flusher, Truncate and DeleteBefore remove from pending, all
	// under flushMu: the batches committed are still its first ones.
	bytes := 0
	for _, p := range batch {
		bytes += len(p.value) - kvlog.ValueHeader
	}
	e.pending = e.pending[len(batch):]
	e.pendingBytes -= bytes
	e.committed = batch[len(batch)-1].next()
	e.durable = e.committed
	e.broadcastLocked()
	return nil
}

// commit runs fill in a write transaction and commits it; when Badger says
// the transaction is full, it commits and goes on in a new one. Each commit
// is synced (SyncWrites). Badger failures it only logged count too.
func (e *Engine) commit(fill func(put func(key, value []byte) error) error) error {
	txn := e.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	write := func(key, value []byte, del bool) error {
		for range 2 {
			var err error
			if del {
				err = txn.Delete(key)
			} else {
				err = txn.Set(key, value)
			}
			if !errors.Is(err, badgerdb.ErrTxnTooBig) {
				return err
			}
			if err := e.commitTxn(txn); err != nil {
				return err
			}
			txn = e.db.NewTransaction(true)
		}
		return fmt.Errorf("key %x does not fit in an empty transaction", key)
	}
	err := fill(func(key, value []byte) error { return write(key, value, value == nil) })
	if err != nil {
		return err
	}
	return e.commitTxn(txn)
}

func (e *Engine) commitTxn(txn *badgerdb.Txn) error {
	if err := txn.Commit(); err != nil {
		return err
	}
	return e.log.err()
}

// failLocked makes err the sticky error and wakes every waiter.
func (e *Engine) failLocked(err error) {
	if e.failed == nil {
		e.failed = err
		e.log.log.Error("badger: write failed; refusing writes from now on", "err", err)
	}
	e.broadcastLocked()
}

func (e *Engine) broadcastLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// every runs f on each tick of t, re-armed for interval, until the engine
// stops.
func (e *Engine) every(t clock.Timer, interval time.Duration, f func()) {
	defer e.workers.Done()
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C():
		}
		f()
		t.Reset(interval)
	}
}

// collectGarbage runs value log garbage collection as long as it finds
// files worth rewriting, or until the engine stops.
func (e *Engine) collectGarbage() {
	for {
		err := e.db.RunValueLogGC(gcDiscardRatio)
		if err != nil {
			if !errors.Is(err, badgerdb.ErrNoRewrite) && !errors.Is(err, badgerdb.ErrRejected) {
				e.log.log.Warn("badger: value log GC", "err", err)
			}
			return
		}
		select {
		case <-e.stop:
			return
		default:
		}
	}
}
