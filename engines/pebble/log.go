package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Name is the name the engine registers under.
const Name = "pebble"

// Driver is the pebble engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name:      Name,
	Caps:      engine.Capabilities{CustomFS: true, Durable: true, SharedCommit: true},
	Open:      func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(dir, opts) },
	OpenStore: func(dir string, opts engine.Options) (engine.Store, error) { return OpenStore(dir, opts) },
}

func init() { engine.Register(Driver) }

var _ engine.LogEngine = (*Engine)(nil)

// Engine is one partition's log in a pebble database: alone in it (Open),
// or one of a Store's.
type Engine struct {
	db            *db
	sp            kvlog.Space
	maxBatchBytes int
	// alone: the database is the log's own, closed with it; otherwise
	// store is told when the log closes.
	alone bool
	store *Store
	id    engine.LogID

	// life guards the log against Close: every call holds it shared while
	// it works, Close holds it exclusively.
	life   sync.RWMutex
	closed bool

	// wmu orders writers (Append, Truncate, DeleteBefore); start, end and
	// last change only under it and are read without it.
	wmu   sync.Mutex
	start atomic.Int64
	end   atomic.Int64
	last  atomic.Uint64 // the number (db.seq) of the last append
	buf   []byte        // value buffer, reused under wmu (pebble copies it)
}

// Open opens (or creates) the pebble log alone in its database in dir.
func Open(dir string, opts engine.Options) (*Engine, error) {
	d, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	if _, err := d.get(kvlog.FormatKey); err == nil {
		d.abandon()
		return nil, fmt.Errorf("pebble: %s holds a store of logs, not one log: %w", dir, engine.ErrWrongEngine)
	} else if !errors.Is(err, pebbledb.ErrNotFound) {
		d.abandon()
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	e := newLog(d, kvlog.Space{})
	e.alone = true
	if err := e.recover(); err != nil {
		_ = d.close()
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	d.syncs.advance(d.seq.Load())
	d.opts.Logger.Debug("pebble: opened", "dir", dir, "start", e.start.Load(), "end", e.end.Load())
	return e, nil
}

func newLog(d *db, sp kvlog.Space) *Engine {
	return &Engine{db: d, sp: sp, maxBatchBytes: d.opts.MaxBatchBytes}
}

// get reads key from the database; the value is a copy.
func (d *db) get(key []byte) ([]byte, error) {
	v, closer, err := d.pdb.Get(key)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// recover reads the log's bounds from the database.
func (e *Engine) recover() error {
	start := int64(0)
	v, err := e.db.get(e.sp.StartKey())
	switch {
	case err == nil:
		if start, err = kvlog.DecodeOffset(v); err != nil {
			return err
		}
	case !errors.Is(err, pebbledb.ErrNotFound):
		return fmt.Errorf("read start offset: %w", storeErr(err))
	}
	it, err := e.db.pdb.NewIter(&pebbledb.IterOptions{LowerBound: e.sp.BatchSpace(), UpperBound: e.sp.BatchLimit()})
	if err != nil {
		return fmt.Errorf("iterate: %w", storeErr(err))
	}
	defer it.Close()
	end := start
	if it.Last() {
		val, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read last batch: %w", storeErr(err))
		}
		b, err := e.sp.DecodeBatch(it.Key(), val)
		if err != nil {
			return fmt.Errorf("last batch: %w", err)
		}
		end = max(end, b.NextOffset())
	} else if err := it.Error(); err != nil {
		return fmt.Errorf("find last batch: %w", storeErr(err))
	}
	e.start.Store(start)
	e.end.Store(end)
	return nil
}

// use holds the log and its database open for a call that does not write;
// it returns the release, or ErrClosed with nothing held.
func (e *Engine) use() (func(), error) {
	e.life.RLock()
	if e.closed {
		e.life.RUnlock()
		return nil, engine.ErrClosed
	}
	release, err := e.db.use()
	if err != nil {
		e.life.RUnlock()
		return nil, err
	}
	return func() { release(); e.life.RUnlock() }, nil
}

// lockWriter takes what a writer (Append, Truncate, DeleteBefore) holds
// while it works: the log and its database, open (shared), and the
// writers' order (wmu); and refuses to go on after an earlier failure. It
// returns the release function, or an error with nothing held.
func (e *Engine) lockWriter() (func(), error) {
	release, err := e.use()
	if err != nil {
		return nil, err
	}
	e.wmu.Lock()
	if err := e.db.stickyErr(); err != nil {
		e.wmu.Unlock()
		release()
		return nil, err
	}
	return func() { e.wmu.Unlock(); release() }, nil
}

// Append implements engine.LogEngine.
func (e *Engine) Append(b engine.Batch) error {
	if err := b.Validate(e.maxBatchBytes); err != nil {
		return err
	}
	release, err := e.lockWriter()
	if err != nil {
		return err
	}
	defer release()
	if end := e.end.Load(); b.BaseOffset != end {
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, end)
	}
	e.buf = kvlog.AppendValue(e.buf[:0], b)
	err = e.db.write(func() error { return e.db.pdb.Set(e.sp.BatchKey(b.BaseOffset), e.buf, pebbledb.NoSync) })
	if cap(e.buf) > 1<<20 {
		e.buf = nil // do not pin a large batch's buffer for the life of the log
	}
	if err != nil {
		return fmt.Errorf("pebble: append at %d: %w", b.BaseOffset, err)
	}
	e.db.meter.Appended(len(b.Data))
	// The number before the end: a Sync that sees the new end waits for it.
	e.last.Store(e.db.seq.Add(1))
	e.end.Store(b.NextOffset())
	return nil
}

// Sync implements engine.LogEngine: it waits for the database's group
// commit to cover every write numbered so far, this log's and every
// other's (a Sync of any log of a Store makes every earlier append to the
// store durable: SharedCommit), whichever log's Sync runs the round.
func (e *Engine) Sync(ctx context.Context, end int64) error {
	release, err := e.use()
	if err != nil {
		return err
	}
	err = e.db.stickyErr()
	release()
	if err != nil {
		return err
	}
	return e.db.syncs.wait(ctx, e.db.seq.Load())
}

// Read implements engine.LogEngine.
func (e *Engine) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	release, err := e.use()
	if err != nil {
		return nil, err
	}
	defer release()
	start, end := e.start.Load(), e.end.Load()
	if err := engine.CheckReadOffset(offset, start, end); err != nil {
		return nil, err
	}
	if offset == end {
		return nil, nil
	}
	it, err := e.db.pdb.NewIter(&pebbledb.IterOptions{LowerBound: e.sp.BatchSpace(), UpperBound: e.sp.BatchKey(end)})
	if err != nil {
		return nil, fmt.Errorf("pebble: read %d: %w", offset, storeErr(err))
	}
	defer it.Close()
	c := kvlog.Collector{Offset: offset, MaxBytes: maxBytes}
	for ok := it.SeekLT(e.sp.BatchKey(offset + 1)); ok; ok = it.Next() {
		val, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("pebble: read %d: %w", offset, storeErr(err))
		}
		if c.Full(len(val) - kvlog.ValueHeader) {
			break
		}
		b, err := e.sp.DecodeBatch(it.Key(), val)
		if err != nil {
			return nil, fmt.Errorf("pebble: read %d: %w", offset, err)
		}
		b.Data = bytes.Clone(b.Data) // val is pebble's; Data is the caller's
		if more, err := c.Add(b); err != nil {
			return nil, fmt.Errorf("pebble: read %d: %w", offset, err)
		} else if !more {
			break // the batch holding offset went in a concurrent Truncate
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("pebble: read %d: %w", offset, storeErr(err))
	}
	if len(c.Batches) == 0 {
		// A concurrent Truncate or DeleteBefore removed the batch.
		return nil, fmt.Errorf("%w: %d is no longer in the log", engine.ErrOffsetOutOfRange, offset)
	}
	return c.Batches, nil
}

// StartOffset implements engine.LogEngine.
func (e *Engine) StartOffset() int64 { return e.start.Load() }

// EndOffset implements engine.LogEngine.
func (e *Engine) EndOffset() int64 { return e.end.Load() }

// Close implements engine.LogEngine: the log's appends are made durable
// (a WAL sync, unless one covered them already) and, for a log alone, the
// database is closed.
func (e *Engine) Close() error {
	e.life.Lock()
	if e.closed {
		e.life.Unlock()
		return engine.ErrClosed
	}
	e.closed = true
	var err error
	if e.alone {
		err = e.db.close()
	} else {
		err = e.syncOnClose()
	}
	e.life.Unlock()
	if e.store != nil {
		e.store.release(e)
	}
	return err
}

// syncOnClose makes the log's appends durable as it closes.
func (e *Engine) syncOnClose() error {
	release, err := e.db.use()
	if err != nil {
		return err
	}
	defer release()
	if err := e.db.stickyErr(); err != nil || e.db.syncs.covered(e.last.Load()) {
		return err
	}
	if err := e.db.syncedWrite(func() error { return e.db.pdb.LogData(nil, pebbledb.Sync) }); err != nil {
		return fmt.Errorf("pebble: sync WAL at close: %w", err)
	}
	return nil
}
