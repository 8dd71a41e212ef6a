// Package pebble is a LogEngine over the Pebble LSM
// (github.com/cockroachdb/pebble/v2): one Pebble DB per partition log, kept
// in dir/db beside the engine marker.
//
// # Design
//
// Each batch is one key-value pair: the key is a prefix byte and the batch's
// base offset, big-endian, so keys sort in log order; the value is a CRC-32C,
// the record count and the batch bytes (the layout is engines/kvlog's, shared
// with the badger engine). The CRC is ours, checked on every read, so that
// "no corrupt batch is ever returned" holds the same way as for every other
// engine, whatever the store checks itself. One more key holds the log start
// offset, written only by DeleteBefore. Read(offset) seeks to the last key at
// or below offset and iterates forward (a hole in the keys would be
// ErrCorrupt, never served).
// On open, the start comes from its key (0 when absent) and the end from the
// last batch key (the start when there is none).
//
// Durability is Pebble's own WAL. Append commits without syncing
// (pebble.NoSync): the batch is in the memtable and readable, and Pebble's WAL
// writer hands it to the OS in the background. Sync is a group commit: one
// goroutine commits a WAL sync (an empty LogData record with pebble.Sync) and
// completes every waiter that arrived before it, while later waiters queue for
// the next one. Truncate (a range deletion) and DeleteBefore (a range deletion
// plus the new start, in one Pebble batch) commit with pebble.Sync, so they
// are durable when they return, and so is everything appended before them.
// What Open recovers counts as durable at once: pebble flushes what it
// replays from the WAL to synced sstables before its Open returns (a test
// checks it with a power loss right after a reopen).
//
// What Open recovers is also a prefix of what was appended, never a later
// batch without an earlier one, because every batch goes to a WAL in
// pebble's WAL sync chunk format. Left to itself, pebble writes a new store's
// first WAL in an older format whose replay, after a power loss, can skip one
// record and go on with the next (prepareStore says how); so Open creates a
// new store at the newest format from the start, and rotates a store found
// at an older format to a fresh WAL before any batch is written.
//
// # Failing and crashing disks
//
// Pebble is fail-stop: it calls its logger's Fatalf (which exits) when a WAL
// or MANIFEST write fails, panics when a directory sync fails or when it
// cannot close or create a WAL as it rotates to a new one (then with its
// mutexes in a state that ends the process whatever recovers the panic), and
// retries a failed flush forever. A broker serving many partitions cannot exit for one
// failed write, so the engine puts two layers under pebble:
//   - its logger records Fatalf instead of exiting (for a commit, pebble then
//     goes on as if the write had succeeded, so every write checks it);
//   - its filesystem (storeFS, fs.go) syncs a directory after creating a file
//     in it, so that pebble's MANIFEST is never lost behind the marker that
//     names it; freezes the disk at the first failed change, so that what
//     stays on disk is what a crash at that moment would leave; and reports
//     to pebble as successes the failures it cannot take (a failed directory
//     sync, any failure of a WAL, a failed close after the freeze), which the
//     freeze and the engine's check of the kept error make safe, rather than
//     let pebble panic in its own goroutines or with its mutexes in a state
//     that ends the process.
//
// The first failure from either becomes the engine's sticky error: Append,
// Sync, Truncate and DeleteBefore return it from then on (no Sync succeeds
// after a failed one); Read still serves what pebble holds. Open gives up at
// the first failed change instead of waiting for a pebble.Open that may never
// return, and lets that pebble.Open run to its end on a disk where nothing
// changes any more, then closes what it returns. A panic out of pebble on the engine's
// own goroutines is an error too, after which pebble is not called again.
//
// # Amplification
//
// Every byte is written twice before any compaction: once to the WAL, once
// in the sstable the memtable flushes to. Keys only ever grow, so flushed
// sstables do not overlap each other and Pebble moves most of them down the
// levels without rewriting them; expect write amplification of about 2-3, not
// the 10+ of random keys. Range deletions (Truncate, DeleteBefore) are one
// small tombstone each; the space comes back when compactions drop the
// covered sstables, whole, as a "delete-only" compaction. So disk use lags
// retention by up to a memtable plus a compaction, and a deleted prefix may
// stay on disk until the next compaction touches it.
//
// # Tuning
//
// The broker runs one DB per partition, so the defaults are for many small
// DBs in one process rather than one big one:
//   - 16 MiB memtables, at most 4 queued (Pebble starts each DB at 256 KiB
//     and doubles, so an idle partition costs little); a 1 MiB batch stays
//     well under Pebble's large-batch threshold of half a memtable;
//   - one 32 MiB block cache and one 1024-entry sstable file cache shared by
//     every pebble engine in the process, instead of 8 MiB and up to 1000
//     open files per DB: consumers mostly read the tail, from the memtable;
//   - 32 KiB sstable blocks (default 4 KiB) and 8 MiB L0 files: the log is
//     read sequentially, never by point lookup, so no bloom filters either;
//   - the newest format version (WAL sync chunks tell a torn WAL tail from
//     corruption on replay, and never leave a hole; see above);
//   - Pebble's messages go to Options.Logger (Infof at debug level).
//
// Capabilities: CustomFS (all I/O goes through Options.FS, so the crash
// suite can run it on a crashable in-memory filesystem) and Durable.
package pebble

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Name is the name the engine registers under.
const Name = "pebble"

// Driver is the pebble engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name:  Name,
	Caps:  engine.Capabilities{CustomFS: true, Durable: true},
	Open:  func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(dir, opts) },
	Notes: notes,
}

func init() { engine.Register(Driver) }

var _ engine.LogEngine = (*Engine)(nil)

// Engine is one partition's log in a Pebble DB.
type Engine struct {
	db            *pebbledb.DB
	fs            *storeFS
	log           *storeLog
	policy        engine.SyncPolicy
	maxBatchBytes int
	syncs         groupSync
	// meter reports every WAL sync that covers appends (the group commit's
	// rounds, and the syncs of Truncate, DeleteBefore and Close) to
	// Options.Observer; nil when there is none. Append counts into it once
	// its batch is in pebble, so a WAL sync that begins after covers it.
	meter *engine.SyncMeter

	// life guards db against Close: every call holds it shared while it uses
	// db, Close holds it exclusively.
	life   sync.RWMutex
	closed bool

	// wmu orders writers (Append, Truncate, DeleteBefore); start and end
	// change only under it and are read without it.
	wmu    sync.Mutex
	start  atomic.Int64
	end    atomic.Int64
	failed atomic.Pointer[error] // sticky write error
	wedged atomic.Bool           // pebble panicked: leave db alone
	buf    []byte                // value buffer, reused under wmu (pebble copies it)

	stopFlusher chan struct{}
	flusherDone sync.WaitGroup
}

// flushEvery syncs the WAL every interval under SyncInterval.
func (e *Engine) flushEvery(t clock.Timer, interval time.Duration) {
	defer e.flusherDone.Done()
	defer t.Stop()
	for {
		select {
		case <-e.stopFlusher:
			return
		case <-t.C():
		}
		// A failure is sticky and reported by the next Append or Sync.
		_ = e.syncs.wait(context.Background(), e.end.Load())
		t.Reset(interval)
	}
}

// syncWAL is the group commit's flush: one WAL sync covering every batch
// appended before it.
func (e *Engine) syncWAL() (int64, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return 0, engine.ErrClosed
	}
	if err := e.stickyErr(); err != nil {
		return 0, err
	}
	covered := e.end.Load()
	round := e.meter.Begin()
	err := e.write(func() error { return e.db.LogData(nil, pebbledb.Sync) })
	// Reported before groupSync records the new durable end: a Sync that
	// returns has been counted.
	round.End(err)
	if err != nil {
		return 0, fmt.Errorf("pebble: sync WAL: %w", err)
	}
	return covered, nil
}

// write runs one pebble write. Its error, a fatal error pebble reported
// meanwhile, a failed disk write underneath, or a panic all become the
// engine's sticky error.
func (e *Engine) write(fn func() error) error {
	err := e.guard(fn)
	if err == nil {
		err = e.storeFailure()
	}
	if err != nil {
		err = storeErr(err)
		e.failed.CompareAndSwap(nil, &err)
	}
	return err
}

// guard runs fn and turns a panic out of pebble into an error. Pebble panics
// when a directory sync fails, possibly holding its own locks: after one the
// DB is not touched again, not even to close it.
func (e *Engine) guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e.wedged.Store(true)
			err = fmt.Errorf("pebble panicked: %v", r)
		}
	}()
	return fn()
}

// storeFailure reports a failure pebble did not return to a caller: a Fatalf,
// or a failed write of the filesystem (a background flush, say).
func (e *Engine) storeFailure() error {
	if err := e.log.err(); err != nil {
		return err
	}
	return e.fs.err()
}

func (e *Engine) stickyErr() error {
	if p := e.failed.Load(); p != nil {
		return fmt.Errorf("pebble: an earlier write failed: %w", *p)
	}
	if err := e.storeFailure(); err != nil {
		err = storeErr(err)
		e.failed.CompareAndSwap(nil, &err)
		return fmt.Errorf("pebble: a write failed: %w", err)
	}
	return nil
}

// lockWriter takes what a writer (Append, Truncate, DeleteBefore) holds while
// it works: the engine, open (life, shared), and the writers' order (wmu);
// and refuses to go on after an earlier failure. It returns the release
// function, or an error with nothing held.
func (e *Engine) lockWriter() (func(), error) {
	e.life.RLock()
	if e.closed {
		e.life.RUnlock()
		return nil, engine.ErrClosed
	}
	e.wmu.Lock()
	if err := e.stickyErr(); err != nil {
		e.wmu.Unlock()
		e.life.RUnlock()
		return nil, err
	}
	return func() {
		e.wmu.Unlock()
		e.life.RUnlock()
	}, nil
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
	err = e.write(func() error { return e.db.Set(kvlog.BatchKey(b.BaseOffset), e.buf, pebbledb.NoSync) })
	if cap(e.buf) > 1<<20 {
		e.buf = nil // do not pin a large batch's buffer for the life of the engine
	}
	if err != nil {
		return fmt.Errorf("pebble: append at %d: %w", b.BaseOffset, err)
	}
	e.meter.Appended(len(b.Data))
	e.end.Store(b.NextOffset())
	return nil
}

// Sync implements engine.LogEngine.
func (e *Engine) Sync(ctx context.Context, end int64) error {
	e.life.RLock()
	closed := e.closed
	e.life.RUnlock()
	if closed {
		return engine.ErrClosed
	}
	if err := e.stickyErr(); err != nil {
		return err
	}
	if e.policy != engine.SyncAlways {
		return nil
	}
	return e.syncs.wait(ctx, min(end, e.end.Load()))
}

// Read implements engine.LogEngine.
func (e *Engine) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	start, end := e.start.Load(), e.end.Load()
	if err := engine.CheckReadOffset(offset, start, end); err != nil {
		return nil, err
	}
	if offset == end {
		return nil, nil
	}
	it, err := e.db.NewIter(&pebbledb.IterOptions{LowerBound: kvlog.BatchSpace, UpperBound: kvlog.BatchKey(end)})
	if err != nil {
		return nil, fmt.Errorf("pebble: read %d: %w", offset, storeErr(err))
	}
	defer it.Close()
	c := kvlog.Collector{Offset: offset, MaxBytes: maxBytes}
	for ok := it.SeekLT(kvlog.BatchKey(offset + 1)); ok; ok = it.Next() {
		val, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("pebble: read %d: %w", offset, storeErr(err))
		}
		if c.Full(len(val) - kvlog.ValueHeader) {
			break
		}
		b, err := kvlog.DecodeBatch(it.Key(), val)
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

// Close implements engine.LogEngine.
func (e *Engine) Close() error {
	e.life.Lock()
	if e.closed {
		e.life.Unlock()
		return engine.ErrClosed
	}
	e.closed = true
	err := e.stickyErr()
	if err == nil {
		end := e.end.Load()
		round := e.meter.Begin()
		err = e.write(func() error { return e.db.LogData(nil, pebbledb.Sync) })
		round.End(err)
		if err == nil {
			e.syncs.advance(end)
		} else {
			err = fmt.Errorf("pebble: sync WAL at close: %w", err)
		}
	}
	if !e.wedged.Load() {
		if cerr := e.guard(e.db.Close); cerr != nil && err == nil {
			err = fmt.Errorf("pebble: close: %w", storeErr(cerr))
		}
	}
	e.life.Unlock()
	close(e.stopFlusher)
	e.flusherDone.Wait()
	return err
}
