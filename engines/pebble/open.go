package pebble

import (
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/engine"
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
		stopFlusher:   make(chan struct{}),
	}
	e.syncs.flush = e.syncWAL
	if err := e.recover(); err != nil {
		_ = e.guard(db.Close)
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

// openStore opens the pebble DB and gives up as soon as a disk write fails
// under it. Pebble's Open would return some of those failures, but when the
// flush of a recovered WAL fails it retries forever and never returns; so on
// the first failure the filesystem is fenced (pebble's further writes park)
// and the DB, if pebble ever hands it over, is closed and dropped. A panic
// out of pebble.Open (a failed directory sync) is an error too.
func openStore(path string, o *pebbledb.Options) (*pebbledb.DB, error) {
	fs := o.FS.(*storeFS)
	type result struct {
		db  *pebbledb.DB
		err error
	}
	opened := make(chan result, 1)
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
		if r.err == nil && fs.err() != nil {
			// Pebble went on past a failed write; the store is not sound.
			_ = r.db.Close()
			return nil, fs.err()
		}
		return r.db, r.err
	case <-fs.failedCh:
		fs.fence()
		go func() {
			if r := <-opened; r.db != nil {
				_ = r.db.Close()
			}
		}()
		return nil, fs.err()
	}
}

// recover reads the log's bounds from the store.
func (e *Engine) recover() error {
	start := int64(0)
	v, closer, err := e.db.Get(startKey)
	switch {
	case err == nil:
		start, err = decodeStart(v)
		closer.Close()
		if err != nil {
			return err
		}
	case err != pebbledb.ErrNotFound:
		return fmt.Errorf("read start offset: %w", storeErr(err))
	}
	it, err := e.db.NewIter(&pebbledb.IterOptions{LowerBound: []byte{batchPrefix}, UpperBound: batchLimit})
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
		b, err := decodeBatch(it.Key(), val)
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
