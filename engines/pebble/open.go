package pebble

import (
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Open opens (or creates) the pebble log in dir.
func Open(dir string, opts engine.Options) (*Engine, error) {
	opts = opts.WithDefaults()
	if err := engine.ClaimDir(opts.FS, dir, Name); err != nil {
		return nil, err
	}
	fs := newStoreFS(opts.FS)
	log := &storeLog{log: opts.Logger}
	path := opts.FS.PathJoin(dir, "db")
	rotate := walFormatOutdated(opts.FS, path)
	db, err := openStore(path, storeOptions(opts, fs, log))
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", path, storeErr(err))
	}
	e := &Engine{
		db:            db,
		fs:            fs,
		log:           log,
		policy:        opts.Sync,
		maxBatchBytes: opts.MaxBatchBytes,
		meter:         engine.NewSyncMeter(opts),
		stopFlusher:   make(chan struct{}),
	}
	e.syncs.flush = e.syncWAL
	if rotate {
		// A flush, even of the empty memtable, starts a new WAL, in the
		// format pebble.Open has just moved the store to. It returns once
		// the new WAL is in place; the flush itself goes on in the background.
		err = e.write(func() error { _, err := db.AsyncFlush(); return err })
	}
	if err == nil {
		err = e.recover()
	}
	if err != nil {
		if !e.wedged.Load() {
			_ = e.guard(db.Close)
		}
		return nil, fmt.Errorf("pebble: open %s: %w", path, err)
	}
	e.syncs.advance(e.end.Load())
	opts.Logger.Debug("pebble: opened", "dir", dir, "start", e.start.Load(), "end", e.end.Load())
	if opts.Sync == engine.SyncInterval {
		// The timer starts here, not in the goroutine, so that a manual
		// clock advanced right after Open fires it.
		t := opts.Clock.NewTimer(opts.SyncInterval)
		e.flusherDone.Add(1)
		go e.flushEvery(t, opts.SyncInterval)
	}
	return e, nil
}

// walFormatOutdated reports whether the WAL pebble.Open is about to create
// in path will use the recyclable chunk format rather than the WAL sync chunk
// format (FormatWALSyncChunks), so that the engine must rotate to a new WAL
// before it writes anything.
//
// Pebble creates a new store at its oldest format version and moves it to
// Options.FormatMajorVersion only at the end of Open, after it has created
// the first WAL; so a new store's first WAL, the one every batch appended
// before the first memtable flush goes to, is in the old format. Pebble's
// reader misreads that format after a power loss: when the last 11 to 18
// bytes of a 32 KiB WAL block read as zeros (an unsynced 4 KiB disk block
// that did not survive) it takes them for the padding the newer format
// writes there, skips to the next block, drops the rest of the record that
// began in those bytes, and goes on replaying the records after it. The
// recovered log then has a hole: a later batch without an earlier one (the
// crash suite's seed 1001). In the WAL sync format a record never starts in
// the last 18 bytes of a block, so zeros there are only ever padding, and a
// lost block anywhere else ends the replay: what is recovered is a prefix.
//
// Any doubt (no store yet, an unreadable one) counts as outdated: rotating
// costs one empty flush.
func walFormatOutdated(fs vfs.FS, path string) bool {
	desc, err := pebbledb.Peek(path, fs)
	return err != nil || !desc.Exists || desc.FormatMajorVersion < pebbledb.FormatWALSyncChunks
}

// openStore opens the pebble DB and gives up as soon as a disk write fails
// under it. Pebble's Open would return some of those failures, but when the
// flush of a recovered WAL fails it retries forever and never returns, and
// when it fails late it leaves goroutines behind; so pebble.Open never sees a
// failed change: the first one abandons the store (it and every later change
// succeed without reaching the disk, see storeFS), openStore returns the
// failure at once, and the DB pebble then hands over is closed and dropped.
// A panic out of pebble.Open is an error too.
func openStore(path string, o *pebbledb.Options) (*pebbledb.DB, error) {
	fs := o.FS.(*storeFS)
	type result struct {
		db  *pebbledb.DB
		err error
	}
	opened := make(chan result, 1)
	fs.startOpening()
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("pebble panicked: %v", p)}
			}
			opened <- r
		}()
		r.db, r.err = pebbledb.Open(path, o)
	}()
	select {
	case r := <-opened:
		if err := fs.endOpening(); err != nil && r.err == nil {
			// A change failed, and pebble was told it succeeded.
			closeQuietly(r.db)
			return nil, err
		}
		return r.db, r.err
	case <-fs.failedCh: // the store is abandoned: pebble.Open will return
		go func() {
			if r := <-opened; r.db != nil {
				closeQuietly(r.db)
			}
		}()
		return nil, fs.err()
	}
}

// closeQuietly closes a DB the engine gives up on; its error, or panic,
// changes nothing.
func closeQuietly(db *pebbledb.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// recover reads the log's bounds from the store.
func (e *Engine) recover() error {
	start := int64(0)
	v, closer, err := e.db.Get(kvlog.StartKey)
	switch {
	case err == nil:
		start, err = kvlog.DecodeOffset(v)
		closer.Close()
		if err != nil {
			return err
		}
	case err != pebbledb.ErrNotFound:
		return fmt.Errorf("read start offset: %w", storeErr(err))
	}
	it, err := e.db.NewIter(&pebbledb.IterOptions{LowerBound: kvlog.BatchSpace, UpperBound: kvlog.BatchLimit})
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
		b, err := kvlog.DecodeBatch(it.Key(), val)
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
