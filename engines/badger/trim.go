package badger

import (
	"fmt"
	"sort"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// lockTrim takes everything a Truncate or DeleteBefore needs: no call in
// flight on another goroutine touches the log while it holds them (the
// flusher's rounds leave the log out meanwhile). It returns the release
// function, which wakes the flusher for what is still pending, or an
// error with nothing held.
func (e *Engine) lockTrim() (func(), error) {
	e.life.RLock()
	if e.closed {
		e.life.RUnlock()
		return nil, engine.ErrClosed
	}
	e.wmu.Lock()
	e.trim.Lock()
	e.flushMu.Lock()
	release := func() {
		e.flushMu.Unlock()
		e.trim.Unlock()
		e.wmu.Unlock()
		e.life.RUnlock()
		e.db.wake()
	}
	if err := e.db.sticky(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// Truncate implements engine.LogEngine.
func (e *Engine) Truncate(offset int64) error {
	release, err := e.lockTrim()
	if err != nil {
		return err
	}
	defer release()
	// Writers are excluded: the fields below change only under locks we hold.
	start, end, committed, pending := e.start, e.end, e.committed, e.pending
	if offset < start || offset > end {
		return fmt.Errorf("%w: truncate to %d, log is [%d, %d]", engine.ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return nil
	}
	if offset >= committed {
		// Only pending batches go: nothing on disk changes.
		i := sort.Search(len(pending), func(i int) bool { return pending[i].next() > offset })
		e.mu.Lock()
		defer e.mu.Unlock()
		e.dropPendingLocked(i)
		e.setEndLocked(max(pending[i].base, start))
		return nil
	}
	b, ok, err := e.batchAtOrBelow(offset)
	if err == nil && (!ok || b.NextOffset() <= offset) {
		err = fmt.Errorf("no stored batch holds %d: %w", offset, engine.ErrCorrupt)
	}
	if err == nil {
		err = e.deleteBatches(b.BaseOffset, committed, true,
			&keyValue{key: e.cutKey(), value: kvlog.EncodeOffset(b.BaseOffset)}, &keyValue{key: e.cutKey()})
	}
	if err != nil {
		err = fmt.Errorf("badger: truncate to %d: %w", offset, err)
		e.db.fail(err)
		return err
	}
	// With no batch left the log is empty at its start, which may have been
	// inside the batch just dropped.
	newEnd := max(b.BaseOffset, start)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropPendingLocked(0)
	e.setEndLocked(newEnd)
	e.committed = newEnd
	return nil
}

// dropPendingLocked drops pending[i:] into a new slice, so that readers
// holding the old one keep what they saw. No round takes the log's
// pending batches meanwhile (the caller holds flushMu), and the rounds
// count batches only as they take them.
func (e *Engine) dropPendingLocked(i int) {
	kept := append([]pendingBatch(nil), e.pending[:i]...)
	for _, p := range e.pending[i:] {
		e.pendingBytes -= len(p.value) - valueHeader
	}
	e.pending = kept
}

// DeleteBefore implements engine.LogEngine.
func (e *Engine) DeleteBefore(offset int64) error {
	release, err := e.lockTrim()
	if err != nil {
		return err
	}
	defer release()
	if offset <= e.start {
		return nil
	}
	// Everything pending goes to the store first, so that the deletions
	// below see the whole log.
	if err := e.commitOwn(); err != nil {
		return err
	}
	end := e.end
	cut := end // past the end, every batch goes
	if offset < end {
		// Keep the batch holding the new start: Read(offset) returns it whole.
		b, ok, err := e.batchAtOrBelow(offset)
		if err == nil && (!ok || b.NextOffset() <= offset) {
			err = fmt.Errorf("no stored batch holds %d: %w", offset, engine.ErrCorrupt)
		}
		if err != nil {
			return fmt.Errorf("badger: delete before %d: %w", offset, err)
		}
		cut = b.BaseOffset
	}
	// The new start is written first, in the first transaction: batches a
	// crash leaves below it are dropped by the next Open.
	err = e.deleteBatches(0, cut, false, &keyValue{key: e.sp.StartKey(), value: kvlog.EncodeOffset(offset)}, nil)
	if err != nil {
		err = fmt.Errorf("badger: delete before %d: %w", offset, err)
		e.db.fail(err)
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setStartLocked(offset)
	if offset > end {
		e.setEndLocked(offset)
		e.committed = offset
	}
	return nil
}
