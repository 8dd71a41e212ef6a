package badger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Name is the name the engine registers under.
const Name = "badger"

// Driver is the badger engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name:      Name,
	Caps:      engine.Capabilities{CustomFS: false, Durable: true, SharedCommit: true},
	Open:      func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(dir, opts) },
	OpenStore: func(dir string, opts engine.Options) (engine.Store, error) { return OpenStore(dir, opts) },
}

func init() { engine.Register(Driver) }

var _ engine.LogEngine = (*Engine)(nil)

const valueHeader = kvlog.ValueHeader

// pendingBatch is an appended batch not yet committed to Badger, kept in its
// stored form.
type pendingBatch struct {
	base    int64
	records int32
	seq     uint64 // its number (db.seq)
	value   []byte // header and data, as stored
}

func (p pendingBatch) next() int64 { return p.base + int64(p.records) }

// batch returns a caller-owned copy.
func (p pendingBatch) batch() engine.Batch {
	return engine.Batch{BaseOffset: p.base, Records: p.records, Data: append([]byte(nil), p.value[valueHeader:]...)}
}

// Engine is one partition's log in a Badger database: alone in it (Open),
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

	// wmu orders writers (Append, Truncate, DeleteBefore).
	wmu sync.Mutex
	// trim keeps Truncate and DeleteBefore, which take it exclusively, apart
	// from Reads, which share it.
	trim sync.RWMutex
	// flushMu is held by whoever commits the log's pending batches: a
	// round of the flusher, Truncate, DeleteBefore, Close.
	flushMu sync.Mutex

	// mu guards the log's state below; never held across Badger calls.
	mu           sync.Mutex
	start, end   int64
	committed    int64          // offsets below it are in Badger
	pending      []pendingBatch // [committed, end), contiguous
	pendingBytes int

	startOff, endOff atomic.Int64 // copies of start and end for the getters
}

// Open opens (or creates) the badger log alone in its database in dir.
// It refuses a custom filesystem: Badger does its own I/O.
func Open(dir string, opts engine.Options) (*Engine, error) {
	d, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	if _, ok, err := d.get(kvlog.FormatKey); err != nil || ok {
		d.bdb.Close()
		if err == nil {
			err = engine.ErrWrongEngine
		}
		return nil, fmt.Errorf("badger: %s holds a store of logs, not one log: %w", dir, err)
	}
	e := newLog(d, kvlog.Space{})
	e.alone = true
	if err := e.recover(); err != nil {
		d.bdb.Close()
		return nil, fmt.Errorf("badger: open %s: %w", dir, storeErr(err))
	}
	d.register(e)
	d.start()
	d.opts.Logger.Debug("badger: opened", "dir", dir, "start", e.start, "end", e.end)
	return e, nil
}

func newLog(d *db, sp kvlog.Space) *Engine {
	return &Engine{db: d, sp: sp, maxBatchBytes: d.opts.MaxBatchBytes}
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
	if err := e.db.sticky(); err != nil {
		return err
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	if b.BaseOffset != e.end {
		defer e.mu.Unlock()
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, e.end)
	}
	e.pending = append(e.pending, pendingBatch{
		base:    b.BaseOffset,
		records: b.Records,
		seq:     e.db.seq.Add(1), // under mu: a round that reads the sequence after sees the batch
		value:   kvlog.AppendValue(make([]byte, 0, valueHeader+len(b.Data)), b),
	})
	e.pendingBytes += len(b.Data)
	e.setEndLocked(b.NextOffset())
	wake := e.db.opts.Sync == engine.SyncAlways || e.pendingBytes >= pendingFlushBytes
	e.mu.Unlock()
	if wake {
		e.db.wake()
	}
	return e.throttle()
}

// throttle holds the appender back while the pending list is over
// pendingMaxBytes, so that a flusher that cannot keep up bounds memory; the
// caller holds wmu, so every appender of the log waits.
func (e *Engine) throttle() error {
	for {
		if err := e.db.sticky(); err != nil {
			return err
		}
		e.mu.Lock()
		over := e.pendingBytes >= pendingMaxBytes
		e.mu.Unlock()
		e.db.mu.Lock()
		ch, stopped := e.db.changed, e.db.stopped
		e.db.mu.Unlock()
		if !over || stopped {
			return nil
		}
		e.db.wake()
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

// pendingList is what the log has pending; its first entries stay until
// the one holding flushMu commits them (committedList).
func (e *Engine) pendingList() []pendingBatch {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pending
}

// firstPending is the number of the log's first pending batch, 0 if none.
func (e *Engine) firstPending() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) == 0 {
		return 0
	}
	return e.pending[0].seq
}

// committedList records that list, the first of the log's pending batches,
// is in Badger. Only the holder of flushMu removes from pending, so they
// are still its first ones.
func (e *Engine) committedList(list []pendingBatch) {
	if len(list) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	bytes := 0
	for _, p := range list {
		bytes += len(p.value) - valueHeader
	}
	e.pending = e.pending[len(list):]
	e.pendingBytes -= bytes
	e.committed = list[len(list)-1].next()
}

// commitOwn commits what the log has pending, alone, as a round of its own
// (Truncate, DeleteBefore, Close); the caller holds flushMu.
func (e *Engine) commitOwn() error {
	if err := e.db.sticky(); err != nil {
		return err
	}
	p := e.pendingList()
	if len(p) == 0 {
		return nil
	}
	return e.db.commitRound([]*Engine{e}, [][]pendingBatch{p}, nil)
}

// Sync implements engine.LogEngine: under SyncAlways it waits for a round
// to cover every append numbered so far, this log's and every other's (a
// Sync of any log of a Store makes every earlier append to the store
// durable: SharedCommit).
func (e *Engine) Sync(ctx context.Context, end int64) error {
	e.life.RLock()
	closed := e.closed
	e.life.RUnlock()
	if closed {
		return engine.ErrClosed
	}
	if err := e.db.sticky(); err != nil {
		return err
	}
	seq := e.db.seq.Load()
	for {
		if err := e.db.sticky(); err != nil {
			return err
		}
		d := e.db
		d.mu.Lock()
		done, stopped, ch := seq <= d.durable, d.stopped, d.changed
		d.mu.Unlock()
		switch {
		case done:
			return nil
		case stopped:
			return engine.ErrClosed
		}
		d.wake() // a Truncate may have dropped what would have woken it
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
	for ; i < len(pending) && !c.Full(len(pending[i].value)-valueHeader); i++ {
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

// Close implements engine.LogEngine: it commits what is pending and, for a
// log alone, closes Badger.
func (e *Engine) Close() error {
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	e.flushMu.Lock()
	err := e.commitOwn()
	e.flushMu.Unlock()
	e.db.unregister(e)
	if err != nil {
		err = fmt.Errorf("badger: close: %w", err)
	}
	if e.alone {
		if cerr := e.db.close(); cerr != nil && err == nil && !errors.Is(cerr, engine.ErrClosed) {
			err = cerr
		}
	}
	if e.store != nil {
		e.store.release(e)
	}
	return err
}
