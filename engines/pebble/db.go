package pebble

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

// db is one pebble database and what every log in it shares: the
// filesystem and logger pebble sees, the sticky failure, the numbering of
// writes and the group commit over them, the meter of sync rounds and,
// under SyncInterval, the flusher.
type db struct {
	pdb    *pebbledb.DB
	fs     *storeFS
	log    *storeLog
	opts   engine.Options
	policy engine.SyncPolicy
	// meter reports every WAL sync that covers appends (the group commit's
	// rounds, and the synced writes of Truncate, DeleteBefore and Close)
	// to Options.Observer; nil when there is none. An Append counts into
	// it once its batch is in pebble, so a WAL sync that begins after
	// covers it.
	meter *engine.SyncMeter
	// seq numbers the writes the group commit covers, in WAL order: a
	// write takes its number once pebble has it.
	seq   atomic.Uint64
	syncs groupSync

	// life guards pdb against close: every use holds it shared (use),
	// close holds it exclusively.
	life   sync.RWMutex
	closed bool

	failed atomic.Pointer[error] // sticky write error
	wedged atomic.Bool           // pebble panicked: leave pdb alone

	stopFlusher chan struct{}
	flusherDone sync.WaitGroup
}

// openDB opens (or creates) the pebble database of the engine directory
// dir (dir/db, beside the engine marker).
func openDB(dir string, opts engine.Options) (*db, error) {
	opts = opts.WithDefaults()
	if err := engine.ClaimDir(opts.FS, dir, Name); err != nil {
		return nil, err
	}
	fs := newStoreFS(opts.FS)
	log := &storeLog{log: opts.Logger}
	path := opts.FS.PathJoin(dir, "db")
	o := storeOptions(opts, fs, log)
	if err := makeStoreDir(fs, path); err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", path, err)
	}
	lock, err := pebbledb.LockDirectory(path, fs)
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", path, err)
	}
	// Open takes a reference of its own; this one is for the preparation.
	defer lock.Close()
	o.Lock = lock
	rotate, err := prepareStore(fs, path, o.FormatMajorVersion)
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", path, err)
	}
	pdb, err := openStore(path, o)
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", path, storeErr(err))
	}
	d := &db{pdb: pdb, fs: fs, log: log, opts: opts, policy: opts.Sync, meter: engine.NewSyncMeter(opts), stopFlusher: make(chan struct{})}
	d.syncs.flush = d.syncWAL
	if rotate {
		// A flush, even of the empty memtable, starts a new WAL, in the
		// format pebble.Open has just moved the store to. It returns once
		// the new WAL is in place; the flush itself goes on in the background.
		if err := d.write(func() error { _, err := pdb.AsyncFlush(); return err }); err != nil {
			d.abandon()
			return nil, fmt.Errorf("pebble: open %s: %w", path, err)
		}
	}
	if opts.Sync == engine.SyncInterval {
		// The timer starts here, not in the goroutine, so that a manual
		// clock advanced right after Open fires it.
		t := opts.Clock.NewTimer(opts.SyncInterval)
		d.flusherDone.Add(1)
		go d.flushEvery(t, opts.SyncInterval)
	}
	return d, nil
}

// abandon closes a database that failed to open.
func (d *db) abandon() {
	if !d.wedged.Load() {
		_ = d.guard(d.pdb.Close)
	}
}

// use holds the database open for a call; it returns the release, or
// ErrClosed with nothing held.
func (d *db) use() (func(), error) {
	d.life.RLock()
	if d.closed {
		d.life.RUnlock()
		return nil, engine.ErrClosed
	}
	return d.life.RUnlock, nil
}

// flushEvery syncs the WAL every interval under SyncInterval.
func (d *db) flushEvery(t clock.Timer, interval time.Duration) {
	defer d.flusherDone.Done()
	defer t.Stop()
	for {
		select {
		case <-d.stopFlusher:
			return
		case <-t.C():
		}
		// A failure is sticky and reported by the next Append or Sync.
		_ = d.syncs.wait(context.Background(), d.seq.Load())
		t.Reset(interval)
	}
}

// syncWAL is the group commit's flush: one WAL sync covering every write
// numbered before it.
func (d *db) syncWAL() (uint64, error) {
	release, err := d.use()
	if err != nil {
		return 0, err
	}
	defer release()
	if err := d.stickyErr(); err != nil {
		return 0, err
	}
	covered := d.seq.Load()
	round := d.meter.Begin()
	err = d.write(func() error { return d.pdb.LogData(nil, pebbledb.Sync) })
	// Reported before groupSync records the new durable end: a Sync that
	// returns has been counted.
	round.End(err)
	if err != nil {
		return 0, fmt.Errorf("pebble: sync WAL: %w", err)
	}
	return covered, nil
}

// syncedWrite runs fn, a write pebble syncs itself (pebble.Sync), as a sync
// round: the WAL sync covers every write numbered before it too.
func (d *db) syncedWrite(fn func() error) error {
	covered := d.seq.Load()
	round := d.meter.Begin()
	err := d.write(fn)
	round.End(err)
	if err == nil {
		d.syncs.advance(covered)
	}
	return err
}

// committed numbers a write fn made without syncing and waits for the
// group commit to make it durable.
func (d *db) committed(ctx context.Context) error {
	return d.syncs.wait(ctx, d.seq.Add(1))
}

// write runs one pebble write. Its error, a fatal error pebble reported
// meanwhile, a failed disk write underneath, or a panic all become the
// database's sticky error.
func (d *db) write(fn func() error) error {
	err := d.guard(fn)
	if err == nil {
		err = d.storeFailure()
	}
	if err != nil {
		err = storeErr(err)
		d.failed.CompareAndSwap(nil, &err)
	}
	return err
}

// guard runs fn and turns a panic out of pebble into an error. Pebble panics
// when a directory sync fails, possibly holding its own locks: after one the
// DB is not touched again, not even to close it.
func (d *db) guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.wedged.Store(true)
			err = fmt.Errorf("pebble panicked: %v", r)
		}
	}()
	return fn()
}

// storeFailure reports a failure pebble did not return to a caller: a Fatalf,
// or a failed write of the filesystem (a background flush, say).
func (d *db) storeFailure() error {
	if err := d.log.err(); err != nil {
		return err
	}
	return d.fs.err()
}

func (d *db) stickyErr() error {
	if p := d.failed.Load(); p != nil {
		return fmt.Errorf("pebble: an earlier write failed: %w", *p)
	}
	if err := d.storeFailure(); err != nil {
		err = storeErr(err)
		d.failed.CompareAndSwap(nil, &err)
		return fmt.Errorf("pebble: a write failed: %w", err)
	}
	return nil
}

// close syncs what is not yet durable and closes the database; it returns
// the sticky error if there is one.
func (d *db) close() error {
	d.life.Lock()
	if d.closed {
		d.life.Unlock()
		return engine.ErrClosed
	}
	d.closed = true
	err := d.stickyErr()
	if err == nil && !d.syncs.covered(d.seq.Load()) {
		if err = d.syncedWrite(func() error { return d.pdb.LogData(nil, pebbledb.Sync) }); err != nil {
			err = fmt.Errorf("pebble: sync WAL at close: %w", err)
		}
	}
	if !d.wedged.Load() {
		if cerr := d.guard(d.pdb.Close); cerr != nil && err == nil {
			err = fmt.Errorf("pebble: close: %w", storeErr(cerr))
		}
	}
	d.life.Unlock()
	close(d.stopFlusher)
	d.flusherDone.Wait()
	return err
}
