// Package badger is a LogEngine over Badger (github.com/dgraph-io/badger/v4),
// the LSM that keeps values apart from keys in a value log: one Badger DB per
// partition log, kept in dir/db beside the engine marker.
//
// # Design
//
// Each batch is one key-value pair: the key is a prefix byte and the batch's
// base offset, big-endian, so keys sort in log order; the value is a CRC-32C,
// the record count and the batch bytes (the layout is engines/kvlog's, shared
// with the pebble engine), checked on every
// read so that no corrupt batch is ever returned. One key holds the log start
// offset (written by DeleteBefore), one more exists only while a Truncate is
// under way (cutKey).
//
// Badger syncs once per transaction (SyncWrites: the value log, then the
// memtable's WAL), so a writer committing its own batch pays two fsyncs, and
// 256 of them barely beat one. The engine therefore has its own group commit.
// Append puts the batch, already encoded, on an in-memory pending list: it is
// readable at once (Read serves offsets at or above the committed end from
// that list, those below from Badger) and Append never waits for the disk.
// One flusher goroutine takes everything pending, commits it in one
// transaction (more only if it exceeds Badger's transaction limit), and so
// makes it all durable with one pair of fsyncs; every Sync waiter it covers
// is released together, and what was appended meanwhile goes in the next
// round. Under SyncAlways every Append wakes the flusher; under SyncInterval
// the clock does, every interval; under SyncNever only Close and the pending
// list growing past pendingFlushBytes do (a process crash may lose what is
// pending, up to that much). SyncWrites stays on under every policy: a commit
// that is not synced could let a later, synced one reach the disk before it,
// which would leave holes after a power loss, not just a shorter log.
//
// Badger logs some failures instead of returning them: a failed value log
// fsync inside a commit ("Error while curlf sync"), and, when it opens, an
// sstable that fails its checksum, which it then ignores ("Ignoring table").
// The engine's logger turns every Errorf into the engine's sticky error (and
// an Open error: a checksum failure is ErrCorrupt), so a commit whose fsync
// failed is never acknowledged and a damaged store is not served with holes.
//
// Truncate writes cutKey, deletes the batch keys above the cut newest first,
// and deletes cutKey, in as many synced transactions as it takes; Open
// finishes a Truncate a crash interrupted. DeleteBefore commits what is
// pending, then writes the new start and deletes the keys below it; keys a
// crash left below the start are deleted at the next Open.
//
// Before Badger opens a store, the engine fsyncs its files (and deletes the
// empty log files a process killed inside Badger's Open leaves, which Badger
// cannot open): what a killed process wrote reaches the disk before Badger
// recovers it, so everything recovered counts as durable at once.
//
// # Amplification
//
// Batches of valueThreshold bytes or more (nearly all of them) go to the
// value log, written once, sequentially; the LSM holds only keys and value
// pointers (about 30 bytes a batch), so its flushes and compactions rewrite
// little and write amplification stays near 1 plus the pointers. Smaller
// batches live in the LSM itself: written to the memtable WAL, flushed, and
// rewritten by compactions (about 3 to 10 times). Deleting is where Badger
// costs: it has no range deletion, so DeleteBefore and Truncate write one
// tombstone per batch, and value log space comes back only when a value log
// file is mostly garbage and garbage collection (RunValueLogGC, run every
// gcInterval by the engine's clock) rewrites what is live in it and drops it;
// the discard statistics GC relies on are updated by LSM compactions, so
// space lags retention by up to a value log file (valueLogFileBytes) plus a
// compaction cycle.
//
// # Tuning
//
// Badger's defaults (64 MiB memtables, 5 of them, a 256 MiB block cache, 1 GiB
// value log files, 4 compactors) cost hundreds of MiB per DB; the broker opens
// one per partition. Here: 8 MiB memtables, at most 2 (so at most 16 MiB of
// skiplists a DB), no compression (values in the value log are never
// compressed anyway, and Kafka batches usually are already) and so no block
// cache (tables are read through mmap and the page cache), index cache off
// (table indexes stay in memory; they are small, the LSM holding pointers),
// 64 MiB value log files (or twice MaxBatchBytes), the minimum 2 compactors,
// conflict detection and metrics off, and Badger's messages routed to
// Options.Logger. valueThreshold is 256 bytes: a value pointer and a second
// read are not worth it for a batch smaller than that, and everything larger
// stays out of the LSM's compactions.
//
// Capabilities: Durable, not CustomFS (Badger does its own file I/O through
// the OS and mmap); engine.Open refuses a custom filesystem for it.
package badger

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Name is the name the engine registers under.
const Name = "badger"

// Driver is the badger engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name:  Name,
	Caps:  engine.Capabilities{CustomFS: false, Durable: true},
	Open:  func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(dir, opts) },
	Notes: notes,
}

func init() { engine.Register(Driver) }

var _ engine.LogEngine = (*Engine)(nil)

// pendingBatch is an appended batch not yet committed to Badger, kept in its
// stored form.
type pendingBatch struct {
	base    int64
	records int32
	value   []byte // header and data, as stored
}

func (p pendingBatch) next() int64 { return p.base + int64(p.records) }

// batch returns a caller-owned copy.
func (p pendingBatch) batch() engine.Batch {
	return engine.Batch{BaseOffset: p.base, Records: p.records, Data: append([]byte(nil), p.value[kvlog.ValueHeader:]...)}
}

// Engine is one partition's log in a Badger DB.
type Engine struct {
	db            *badgerdb.DB
	sp            kvlog.Space
	log           *storeLog
	policy        engine.SyncPolicy
	maxBatchBytes int
	// meter reports each flusher round (one synced commit of everything
	// pending) to Options.Observer; nil when there is none. Its count of
	// appends is what the pending list held, so it changes under mu.
	meter *engine.SyncMeter

	// life guards db against Close: every call holds it shared while it uses
	// db, Close holds it exclusively. The flusher and the timers do not take
	// it: Close stops them before it closes db.
	life   sync.RWMutex
	closed bool

	// wmu orders writers (Append, Truncate, DeleteBefore).
	wmu sync.Mutex
	// trim keeps Truncate and DeleteBefore, which take it exclusively, apart
	// from Reads, which share it.
	trim sync.RWMutex
	// flushMu is held by whoever commits to Badger: the flusher, Truncate,
	// DeleteBefore, Close.
	flushMu sync.Mutex

	// mu guards the log's state below; never held across Badger calls.
	mu           sync.Mutex
	start, end   int64
	committed    int64          // offsets below it are in Badger
	pending      []pendingBatch // [committed, end), contiguous
	pendingBytes int
	durable      int64         // offsets below it are durable
	changed      chan struct{} // closed and replaced whenever committed, durable, failed or stopped change
	failed       error         // sticky
	stopped      bool          // closed: waiters give up

	startOff, endOff atomic.Int64 // copies of start and end for the getters

	kick    chan struct{} // wakes the flusher; capacity 1
	stop    chan struct{}
	workers sync.WaitGroup
}

// Append implements engine.LogEngine.
func (e *Engine) Append(b engine.Batch) error {
	if err := b.Validate(e.maxBatchBytes); err != nil {
		return err
	}
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	if e.failed != nil {
		defer e.mu.Unlock()
		return e.stickyLocked()
	}
	if b.BaseOffset != e.end {
		defer e.mu.Unlock()
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, e.end)
	}
	e.pending = append(e.pending, pendingBatch{
		base:    b.BaseOffset,
		records: b.Records,
		value:   kvlog.AppendValue(make([]byte, 0, kvlog.ValueHeader+len(b.Data)), b),
	})
	e.pendingBytes += len(b.Data)
	e.meter.Appended(len(b.Data))
	e.setEndLocked(b.NextOffset())
	wake := e.policy == engine.SyncAlways || e.pendingBytes >= pendingFlushBytes
	e.mu.Unlock()
	if wake {
		e.wake()
	}
	return e.throttle()
}

// throttle holds the appender back while the pending list is over
// pendingMaxBytes, so that a flusher that cannot keep up bounds memory; the
// caller holds wmu, so every appender waits.
func (e *Engine) throttle() error {
	for {
		e.mu.Lock()
		if e.failed != nil {
			defer e.mu.Unlock()
			return e.stickyLocked()
		}
		if e.pendingBytes < pendingMaxBytes || e.stopped {
			e.mu.Unlock()
			return nil
		}
		ch := e.changed
		e.mu.Unlock()
		e.wake()
		<-ch
	}
}

func (e *Engine) setEndLocked(end int64) {
	e.end = end
	e.endOff.Store(end)
}

func (e *Engine) setStartLocked(start int64) {
	e.start = start
	e.startOff.Store(start)
}

// stickyLocked wraps the sticky error; the caller holds mu.
func (e *Engine) stickyLocked() error {
	return fmt.Errorf("badger: an earlier write failed: %w", e.failed)
}

// Sync implements engine.LogEngine.
func (e *Engine) Sync(ctx context.Context, end int64) error {
	e.life.RLock()
	closed := e.closed
	e.life.RUnlock()
	if closed {
		return engine.ErrClosed
	}
	for {
		e.mu.Lock()
		if e.failed != nil {
			defer e.mu.Unlock()
			return e.stickyLocked()
		}
		if e.policy != engine.SyncAlways || min(end, e.end) <= e.durable {
			e.mu.Unlock()
			return nil
		}
		if e.stopped {
			e.mu.Unlock()
			return engine.ErrClosed
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Read implements engine.LogEngine.
func (e *Engine) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	e.trim.RLock()
	defer e.trim.RUnlock()
	e.mu.Lock()
	start, end, committed, pending := e.start, e.end, e.committed, e.pending
	e.mu.Unlock()
	if err := engine.CheckReadOffset(offset, start, end); err != nil {
		return nil, err
	}
	if offset == end {
		return nil, nil
	}
	c := kvlog.Collector{Offset: offset, MaxBytes: maxBytes}
	if offset < committed {
		if err := e.readStore(&c, committed); err != nil {
			return nil, fmt.Errorf("badger: read %d: %w", offset, err)
		}
		if len(c.Batches) == 0 {
			return nil, fmt.Errorf("badger: read %d: no batch holds it: %w", offset, engine.ErrCorrupt)
		}
		if c.Next() < committed {
			return c.Batches, nil // maxBytes reached
		}
	}
	// The rest comes from the pending list, which starts at committed.
	i := sort.Search(len(pending), func(i int) bool { return pending[i].next() > offset })
	for ; i < len(pending) && !c.Full(len(pending[i].value)-kvlog.ValueHeader); i++ {
		if _, err := c.Add(pending[i].batch()); err != nil {
			return nil, fmt.Errorf("badger: read %d: %w", offset, err)
		}
	}
	return c.Batches, nil
}

// StartOffset implements engine.LogEngine.
func (e *Engine) StartOffset() int64 { return e.startOff.Load() }

// EndOffset implements engine.LogEngine.
func (e *Engine) EndOffset() int64 { return e.endOff.Load() }
