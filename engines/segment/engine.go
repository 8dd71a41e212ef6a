package segment

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// Name is the name the engine registers under.
const Name = "segment"

// Driver is the segment engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name:        Name,
	Caps:        engine.Capabilities{CustomFS: true, Durable: true, Inline: true},
	Open:        func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(dir, opts) },
	OpenInStore: func(dir string, opts engine.Options) (engine.LogEngine, error) { return OpenInStore(dir, opts) },
}

func init() { engine.Register(Driver) }

var (
	_ engine.LogEngine = (*Engine)(nil)
	_ engine.Flusher   = (*Engine)(nil)
)

// writeBehindBytes: an Append that leaves this much unwritten in the active
// segment's tail kicks the flusher to write it, Sync or not. Under
// SyncInterval and SyncNever every Append kicks it, so that appended data
// reaches the OS promptly (a process crash then loses nothing) while the
// writes still batch whatever accumulated.
const writeBehindBytes = 64 << 10

// readBudgetMax caps a Read's maxBytes, so that offsets computed from it
// cannot overflow; no read returns that much anyway.
const readBudgetMax = 1 << 40

// Engine is a segmented log in one directory.
//
// Locks, always taken in this order: flushMu (a flusher round, Truncate,
// DeleteBefore, Close: everything that syncs or removes files), mu (the
// append lock: the active segment's writes and the bookkeeping of what is
// unsynced), segMu (the segment list), a segment's mu (its index). sm.mu
// (sync waiters) is taken last or alone. Reads take only segMu, briefly, and
// a segment's mu to look up its index: never the append lock.
type Engine struct {
	fs            vfs.FS
	dir           string
	opts          engine.Options
	log           *slog.Logger
	segmentBytes  atomic.Int64 // SetSegmentBytes changes it
	ckptBytes     atomic.Int64 // the active segment is checkpointed each time this much more of it is durable
	maxBatchBytes int          // Options.MaxBatchBytes, at most segmentBytesMax (a frame's length has 4 bytes)

	start   atomic.Int64
	end     atomic.Int64
	closed  atomic.Bool
	failure atomic.Pointer[error] // the first I/O error, sticky

	flushMu sync.Mutex

	mu          sync.Mutex
	active      *segment
	sealing     []*segment // rolled, not yet synced and indexed
	dirDirty    bool       // a directory entry changed since the last directory sync
	cleanOnDisk bool       // the clean-shutdown marker exists
	changed     bool       // an append, truncation or trim since Open

	// listed holds the names in the directory when recovery began, while
	// it runs (see mayExist); nil afterwards.
	listed map[string]bool

	segMu sync.RWMutex
	segs  []*segment // ascending base offsets; the last is active

	spareMu sync.Mutex // taken alone
	spare   bool       // spareFile exists (see spare.go)

	sm syncState

	kick        chan struct{}
	quit        chan struct{}
	flusherDone chan struct{}
}

var _ engine.SegmentResizer = (*Engine)(nil)

// SetSegmentBytes sets the roll size (clamped as Options.SegmentBytes is):
// the active segment rolls at the next append that would take it past the
// new size, and every segment after it has the new size.
func (e *Engine) SetSegmentBytes(n int64) {
	n = min(max(n, segmentBytesMin), segmentBytesMax)
	e.segmentBytes.Store(n)
	e.ckptBytes.Store(checkpointBytesFor(n))
}

// Open opens the segmented log in dir, creating it if needed, and recovers
// it (see the package documentation).
func Open(dir string, opts engine.Options) (*Engine, error) {
	opts = opts.WithDefaults()
	if err := engine.ClaimDir(opts.FS, dir, Name); err != nil {
		return nil, err
	}
	return openIn(dir, opts)
}

// OpenInStore is Open for a log of a store (engine.DirStore) that has
// claimed dir already (see engine.Driver.OpenInStore): dir exists, and
// its marker, if any, is not read.
func OpenInStore(dir string, opts engine.Options) (*Engine, error) {
	return openIn(dir, opts.WithDefaults())
}

func openIn(dir string, opts engine.Options) (*Engine, error) {
	e := &Engine{
		fs:            opts.FS,
		dir:           dir,
		opts:          opts,
		log:           opts.Logger.With("engine", Name, "dir", dir),
		maxBatchBytes: min(opts.MaxBatchBytes, segmentBytesMax),
		kick:          make(chan struct{}, 1),
		quit:          make(chan struct{}),
		flusherDone:   make(chan struct{}),
	}
	e.SetSegmentBytes(opts.SegmentBytes)
	if err := e.recover(); err != nil {
		e.releaseAll()
		return nil, fmt.Errorf("segment engine %s: open: %w", dir, err)
	}
	e.sm.synced = e.end.Load()
	e.sm.written = e.sm.synced
	e.startFlusher()
	return e, nil
}

func (e *Engine) fail(err error) error {
	e.failure.CompareAndSwap(nil, &err)
	return err
}

func (e *Engine) failed() error {
	if p := e.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// lockAll takes both locks a rewrite of the log needs, the flusher's
// first, and returns what releases them.
func (e *Engine) lockAll() (unlock func()) {
	e.flushMu.Lock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		e.flushMu.Unlock()
	}
}

// writable says why the log takes no write: it is closed, or a write or
// sync failed (sticky).
func (e *Engine) writable() error {
	if e.closed.Load() {
		return engine.ErrClosed
	}
	return e.failed()
}

// Append implements engine.LogEngine. The frame is copied into the active
// segment's in-memory tail under the append lock, and is readable at once;
// the flusher writes it to the file and Sync makes it durable.
func (e *Engine) Append(b engine.Batch) error {
	if err := b.Validate(e.maxBatchBytes); err != nil {
		return err
	}
	if err := e.appendLocking(b); err != nil {
		return err
	}
	if e.opts.Inline {
		// What the flusher, kicked, would do at once: write the frame to
		// the file (and sync a segment it sealed), without syncing the tail.
		e.flushRound(false)
		return e.failed()
	}
	return nil
}

func (e *Engine) appendLocking(b engine.Batch) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	if end := e.end.Load(); b.BaseOffset != end {
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, end)
	}
	if err := e.startWritingLocked(); err != nil {
		return e.fail(err)
	}
	n := frameHeaderLen + len(b.Data)
	s := e.active
	pos := s.endPos.Load()
	if pos > fileHeaderLen && (pos+int64(n) > e.segmentBytes.Load() || !s.relFits(b.BaseOffset)) {
		if err := e.rollLocked(b.BaseOffset); err != nil {
			return e.fail(err)
		}
		s = e.active
	}
	if u := s.unwritten(); u > 0 && u+n > pendBytesMax {
		if err := s.flush(false); err != nil { // held back: the disk is behind
			return e.fail(err)
		}
	}
	pos, pending := s.appendFrame(b)
	if ent, ok := s.builder.add(s.base, b.BaseOffset, pos); ok {
		s.mu.Lock()
		s.entries = append(s.entries, ent)
		s.mu.Unlock()
	}
	// Publish: bytes first, then the segment's extent, then the log end, so
	// a reader that sees the end also sees the bytes.
	s.endPos.Store(pos + int64(n))
	s.end.Store(b.NextOffset())
	e.end.Store(b.NextOffset())
	e.sm.meter.Appended(len(b.Data)) // under mu: the next round's snapshot counts it
	if pending >= writeBehindBytes || e.opts.Sync != engine.SyncAlways {
		e.kickFlusher()
	}
	return nil
}

// startWritingLocked removes the clean-shutdown marker before the first
// change after a clean open: from then on the active segment must be scanned
// after a crash. The next flush syncs the directory before any waiter is
// released.
func (e *Engine) startWritingLocked() error {
	e.changed = true
	if !e.cleanOnDisk {
		return nil
	}
	if err := removeIfExists(e.fs, e.fs.PathJoin(e.dir, cleanFile)); err != nil {
		return err
	}
	e.cleanOnDisk = false
	e.dirDirty = true
	return nil
}

// rollLocked seals the active segment and starts a new one at base. The
// flusher syncs the sealed segment, then the directory, then the new one,
// and writes the sealed segment's index.
func (e *Engine) rollLocked(base int64) error {
	s, err := e.startSegmentFile(base)
	if err != nil {
		return err
	}
	e.segMu.Lock()
	e.segs = append(e.segs, s)
	e.segMu.Unlock()
	e.sealing = append(e.sealing, e.active)
	e.active = s
	e.dirDirty = true
	e.kickFlusher()
	return nil
}

// acquire returns the segment holding offset with a reader's reference, or
// nil when no segment starts at or below it.
func (e *Engine) acquire(offset int64) *segment {
	e.segMu.RLock()
	defer e.segMu.RUnlock()
	i := sort.Search(len(e.segs), func(i int) bool { return e.segs[i].base > offset }) - 1
	if i < 0 {
		return nil
	}
	s := e.segs[i]
	s.acquire()
	return s
}

// StartOffset implements engine.LogEngine.
func (e *Engine) StartOffset() int64 { return e.start.Load() }

// EndOffset implements engine.LogEngine.
func (e *Engine) EndOffset() int64 { return e.end.Load() }

// Close implements engine.LogEngine: it stops the flusher, syncs everything,
// writes the sealed segments' indexes, the active segment's index and the
// clean-shutdown marker, and closes the files (a reader still inside a
// segment keeps it open until it leaves).
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed.Load() {
		e.mu.Unlock()
		return engine.ErrClosed
	}
	e.closed.Store(true)
	e.mu.Unlock()
	close(e.quit)
	<-e.flusherDone

	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.failed()
	// With the marker still on disk nothing changed since a clean open:
	// there is nothing to sync or record. Nor is there for an empty log
	// nothing changed since it opened: its next open has nothing to scan
	// (a broker that made thousands of partitions would otherwise sync
	// each one's files on its way out).
	if err == nil && !e.cleanOnDisk && (e.changed || e.end.Load() != e.start.Load()) {
		err = e.syncAllLocked()
		if err == nil {
			err = e.writeCleanLocked()
		}
	}
	e.completeWaiters(err, true)
	e.releaseAll()
	if err != nil {
		return fmt.Errorf("segment engine %s: close: %w", e.dir, err)
	}
	return nil
}

// writeCleanLocked records a clean shutdown: the active segment's index as a
// snapshot, then the marker naming it and the log end. Open trusts both only
// together, and only if the segment file is exactly as long as the index
// says.
func (e *Engine) writeCleanLocked() error {
	if err := e.active.writeIndex(false, indexDurable); err != nil {
		return err
	}
	c := cleanState{activeBase: e.active.base, end: e.end.Load()}
	if err := engine.WriteFileAtomic(e.fs, e.fs.PathJoin(e.dir, cleanFile), encodeClean(c)); err != nil {
		return fmt.Errorf("write clean-shutdown marker: %w", err)
	}
	e.cleanOnDisk = true
	return nil
}

// releaseAll drops the list's reference on every segment.
func (e *Engine) releaseAll() {
	e.segMu.Lock()
	segs := e.segs
	e.segs = nil
	e.segMu.Unlock()
	for _, s := range segs {
		s.release()
	}
}
