package badger

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

const (
	// pendingFlushBytes wakes the flusher whatever the policy: it bounds
	// how much of a log waits in memory for a Sync or the interval.
	pendingFlushBytes = 4 << 20
	// pendingMaxBytes makes a log's Append wait for the flusher
	// (backpressure).
	pendingMaxBytes = 64 << 20
	// gcInterval is how often value log garbage collection runs.
	gcInterval = time.Minute
	// gcDiscardRatio: a value log file is rewritten once half of it is garbage.
	gcDiscardRatio = 0.5
)

// db is one Badger database and what every log in it shares: the flusher
// whose rounds commit every log's pending batches in one synced
// transaction, the numbering of appends those rounds cover, the sticky
// failure, the store's own writes waiting for a round, value log garbage
// collection and the dropping of deleted logs.
type db struct {
	bdb   *badgerdb.DB
	log   *storeLog
	opts  engine.Options
	meter *engine.SyncMeter // each round's appends, counted as the round takes them
	// seq numbers appends as they join a pending list.
	seq    atomic.Uint64
	failed atomic.Pointer[error] // sticky
	// dropMu keeps commits, which take it shared, apart from DropPrefix,
	// which takes it alone: Badger refuses writes while it drops.
	dropMu sync.RWMutex

	mu      sync.Mutex
	logs    map[*Engine]struct{} // open logs: every round covers them
	meta    []*metaWrite         // store writes for the next round
	durable uint64               // every append numbered at or below it is durable
	changed chan struct{}        // closed and replaced when durable, failed or stopped change
	stopped bool
	drops   []dropJob // deleted logs whose keys the dropper is to drop

	kick    chan struct{} // wakes the flusher; capacity 1
	dropped chan struct{} // wakes the dropper; capacity 1
	stop    chan struct{}
	workers sync.WaitGroup
}

// metaWrite is a write of the store's own keys (a value of nil deletes)
// that the next round commits with the batches; done is closed after, err
// set first.
type metaWrite struct {
	kvs  []keyValue
	done chan struct{}
	err  error
}

type keyValue struct{ key, value []byte }

// openDB opens (or creates) the Badger database of the engine directory
// dir (dir/db, beside the engine marker).
func openDB(dir string, opts engine.Options) (*db, error) {
	if opts.CustomFS() {
		return nil, fmt.Errorf("engine %s: custom filesystem: %w", Name, engine.ErrUnsupported)
	}
	opts = opts.WithDefaults()
	if err := engine.ClaimDir(opts.FS, dir, Name); err != nil {
		return nil, err
	}
	log := &storeLog{log: opts.Logger}
	path := filepath.Join(dir, "db")
	if err := prepareDir(path, log.log); err != nil {
		return nil, fmt.Errorf("badger: open %s: %w", path, err)
	}
	bdb, err := badgerdb.Open(storeOptions(path, opts, log))
	if err != nil {
		if bdb != nil {
			closeHalfBuilt(bdb)
		}
		return nil, fmt.Errorf("badger: open %s: %w", path, storeErr(err))
	}
	err = log.err() // Badger may have logged, and skipped, a damaged table
	if err == nil {
		// Badger's Open creates its directory, its first value log and its
		// discard file, and fsyncs neither directory: on a filesystem where
		// a name is durable only once its directory is, a power loss could
		// take the whole database away, acknowledged batches included.
		err = syncDirs(path, dir)
	}
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("badger: open %s: %w", path, storeErr(err))
	}
	d := &db{
		bdb: bdb, log: log, opts: opts, meter: engine.NewSyncMeter(opts),
		logs: map[*Engine]struct{}{}, changed: make(chan struct{}),
		kick: make(chan struct{}, 1), dropped: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	return d, nil
}

// closeHalfBuilt closes a DB that Badger's Open returned along with an
// error. Badger returns a half-built DB from some failures, and when the
// failure came before its levels were built (a table the manifest lists is
// missing, a bad key registry) its Close dereferences them and panics; a
// failed Open must be an error, not a crash, so that panic is swallowed
// (what it leaves open, the directory lock among it, stays open until the
// process exits).
func closeHalfBuilt(bdb *badgerdb.DB) {
	defer func() { _ = recover() }()
	_ = bdb.Close()
}

// start runs the database's goroutines, once what the open needed to
// read is read. Timers start here, not in their goroutines, so that a
// manual clock advanced right after an open fires them.
func (d *db) start() {
	d.workers.Add(3)
	go d.flushLoop()
	go d.dropLoop()
	go d.every(d.opts.Clock.NewTimer(gcInterval), gcInterval, d.collectGarbage)
	if d.opts.Sync == engine.SyncInterval {
		d.workers.Add(1)
		go d.every(d.opts.Clock.NewTimer(d.opts.SyncInterval), d.opts.SyncInterval, d.wake)
	}
}

// register makes l one of the logs the rounds cover.
func (d *db) register(l *Engine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logs[l] = struct{}{}
}

func (d *db) unregister(l *Engine) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.logs, l)
}

// wake makes the flusher run a round soon; rounds coalesce.
func (d *db) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// sticky is the database's failure, wrapped, or nil.
func (d *db) sticky() error {
	if p := d.failed.Load(); p != nil {
		return fmt.Errorf("badger: an earlier write failed: %w", *p)
	}
	return nil
}

// fail makes err the sticky error and wakes every waiter.
func (d *db) fail(err error) {
	if d.failed.CompareAndSwap(nil, &err) {
		d.log.log.Error("badger: write failed; refusing writes from now on", "err", err)
	}
	d.mu.Lock()
	d.broadcastLocked()
	d.mu.Unlock()
}

func (d *db) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// write commits kvs with the next round, whatever the policy, and returns
// once that round has made them durable.
func (d *db) write(kvs ...keyValue) error {
	w, err := d.queue(kvs...)
	if err != nil {
		return err
	}
	return w.wait()
}

// queue queues kvs for the next round: writes queued one after another
// commit in that order, each one's values over the earlier ones'.
func (d *db) queue(kvs ...keyValue) (*metaWrite, error) {
	w := &metaWrite{kvs: kvs, done: make(chan struct{})}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil, engine.ErrClosed
	}
	d.meta = append(d.meta, w)
	d.wake()
	return w, nil
}

// wait returns once the round that took w has committed it.
func (w *metaWrite) wait() error {
	<-w.done
	return w.err
}

// every runs f on each tick of t, re-armed for interval, until the
// database stops.
func (d *db) every(t clock.Timer, interval time.Duration, f func()) {
	defer d.workers.Done()
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C():
		}
		f()
		t.Reset(interval)
	}
}

// collectGarbage runs value log garbage collection as long as it finds
// files worth rewriting, or until the database stops.
func (d *db) collectGarbage() {
	for {
		err := d.bdb.RunValueLogGC(gcDiscardRatio)
		if err != nil {
			if !errors.Is(err, badgerdb.ErrNoRewrite) && !errors.Is(err, badgerdb.ErrRejected) {
				d.log.log.Warn("badger: value log GC", "err", err)
			}
			return
		}
		select {
		case <-d.stop:
			return
		default:
		}
	}
}

// close stops the goroutines, commits what is still pending (the store's
// logs are closed first; a lone log's too) and closes Badger.
func (d *db) close() error {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return engine.ErrClosed
	}
	d.stopped = true
	d.mu.Unlock()
	close(d.stop)
	d.workers.Wait()
	d.round() // the store writes queued last, if any
	d.mu.Lock()
	d.broadcastLocked()
	d.mu.Unlock()
	err := d.sticky()
	if cerr := d.bdb.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("badger: close: %w", storeErr(cerr))
	}
	return err
}
