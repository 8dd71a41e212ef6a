package pebble

import (
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Truncate implements engine.LogEngine.
func (e *Engine) Truncate(offset int64) error {
	release, err := e.lockWriter()
	if err != nil {
		return err
	}
	defer release()
	start, end := e.start.Load(), e.end.Load()
	if offset < start || offset > end {
		return fmt.Errorf("%w: truncate to %d, log is [%d, %d]", engine.ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return nil
	}
	base, err := e.batchHolding(offset)
	if err != nil {
		return fmt.Errorf("pebble: truncate to %d: %w", offset, err)
	}
	// The synced deletion syncs the WAL, and every append before it.
	err = e.db.syncedWrite(func() error {
		return e.db.pdb.DeleteRange(e.sp.BatchKey(base), e.sp.BatchLimit(), pebbledb.Sync)
	})
	if err != nil {
		return fmt.Errorf("pebble: truncate to %d: %w", offset, err)
	}
	// With no batch left the log is empty at its start, which may have been
	// inside the batch just dropped.
	e.end.Store(max(base, start))
	return nil
}

// DeleteBefore implements engine.LogEngine.
func (e *Engine) DeleteBefore(offset int64) error {
	release, err := e.lockWriter()
	if err != nil {
		return err
	}
	defer release()
	start, end := e.start.Load(), e.end.Load()
	if offset <= start {
		return nil
	}
	// Keep the batch holding the new start: Read(offset) returns it whole.
	// Past the end nothing is kept and the log restarts at offset.
	cut := offset
	if offset < end {
		base, err := e.batchHolding(offset)
		if err != nil {
			return fmt.Errorf("pebble: delete before %d: %w", offset, err)
		}
		cut = base
	}
	b := e.db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(e.sp.BatchSpace(), e.sp.BatchKey(cut), nil); err != nil {
		return fmt.Errorf("pebble: delete before %d: %w", offset, err)
	}
	if err := b.Set(e.sp.StartKey(), kvlog.EncodeOffset(offset), nil); err != nil {
		return fmt.Errorf("pebble: delete before %d: %w", offset, err)
	}
	err = e.db.syncedWrite(func() error { return b.Commit(pebbledb.Sync) })
	if err != nil {
		return fmt.Errorf("pebble: delete before %d: %w", offset, err)
	}
	// Start before end: a reader that sees the new end also sees the new start.
	e.start.Store(offset)
	if offset > end {
		e.end.Store(offset)
	}
	return nil
}

// batchHolding returns the base offset of the batch that holds offset; the
// caller holds wmu and has checked start <= offset < end.
func (e *Engine) batchHolding(offset int64) (int64, error) {
	it, err := e.db.pdb.NewIter(&pebbledb.IterOptions{LowerBound: e.sp.BatchSpace(), UpperBound: e.sp.BatchLimit()})
	if err != nil {
		return 0, storeErr(err)
	}
	defer it.Close()
	if !it.SeekLT(e.sp.BatchKey(offset + 1)) {
		if err := it.Error(); err != nil {
			return 0, storeErr(err)
		}
		return 0, fmt.Errorf("no batch at or below %d: %w", offset, engine.ErrCorrupt)
	}
	val, err := it.ValueAndErr()
	if err != nil {
		return 0, storeErr(err)
	}
	b, err := e.sp.DecodeBatch(it.Key(), val)
	if err != nil {
		return 0, err
	}
	if b.NextOffset() <= offset {
		return 0, fmt.Errorf("batch %d ends at %d, below %d: hole in the log: %w", b.BaseOffset, b.NextOffset(), offset, engine.ErrCorrupt)
	}
	return b.BaseOffset, nil
}
