package pebble

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Store is every partition log of a data directory in one pebble database
// (engine.Store): each log's keys are prefixed by its id (kvlog.LogSpace),
// the store keeps which logs exist and the next id in keys of its own, and
// every log shares the one WAL, its group commit and its memtables.
//
// Create and Delete commit without a sync of their own and wait for the
// group commit, so that the creations of a topic's partitions and the
// appends of others share their fsyncs. Delete is one batch: a range
// deletion of the log's keys and the deletion of its log key, atomic, so a
// crash never leaves half a log. The space comes back as pebble's
// compactions drop the sstables the range deletion covers (it notes them
// as deletion hints when the tombstone is flushed), and the files go at
// Options.DeleteRate (pebble's TargetByteDeletionRate), as the broker's
// deleter paces segment files.
type Store struct {
	db *db

	mu     sync.Mutex
	closed bool
	next   engine.LogID
	logs   map[engine.LogID]bool    // every log of the store
	open   map[engine.LogID]*Engine // the open ones
}

var _ engine.Store = (*Store)(nil)

// OpenStore opens (or creates) the store in dir.
func OpenStore(dir string, opts engine.Options) (*Store, error) {
	d, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{db: d, logs: map[engine.LogID]bool{}, open: map[engine.LogID]*Engine{}}
	if err := s.load(dir); err != nil {
		_ = d.close()
		return nil, err
	}
	d.syncs.advance(d.seq.Load())
	d.opts.Logger.Debug("pebble: store opened", "dir", dir, "logs", len(s.logs))
	return s, nil
}

// load reads the store's keys, making a new store's format key first.
func (s *Store) load(dir string) error {
	format, err := s.db.get(kvlog.FormatKey)
	switch {
	case errors.Is(err, pebbledb.ErrNotFound):
		if err := s.claim(dir); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("pebble: open store %s: %w", dir, storeErr(err))
	case string(format) != string(kvlog.StoreFormat):
		return fmt.Errorf("pebble: store %s: format %q, want %q: %w", dir, format, kvlog.StoreFormat, engine.ErrCorrupt)
	}
	if v, err := s.db.get(kvlog.NextKey); err == nil {
		next, err := kvlog.DecodeOffset(v)
		if err != nil {
			return fmt.Errorf("pebble: store %s: next log id: %w", dir, err)
		}
		s.next = engine.LogID(next)
	} else if !errors.Is(err, pebbledb.ErrNotFound) {
		return fmt.Errorf("pebble: store %s: %w", dir, storeErr(err))
	}
	it, err := s.db.pdb.NewIter(&pebbledb.IterOptions{LowerBound: kvlog.LogKeys, UpperBound: kvlog.LogKeysLimit})
	if err != nil {
		return fmt.Errorf("pebble: store %s: %w", dir, storeErr(err))
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id, ok := kvlog.LogKeyID(it.Key())
		if !ok || id >= s.next {
			return fmt.Errorf("pebble: store %s: log key %x (next id %s): %w", dir, it.Key(), s.next, engine.ErrCorrupt)
		}
		s.logs[id] = true
	}
	return storeErr(it.Error())
}

// claim makes the database a store: it must hold nothing yet (a log
// opened alone with Open holds its batches without a prefix).
func (s *Store) claim(dir string) error {
	it, err := s.db.pdb.NewIter(nil)
	if err != nil {
		return storeErr(err)
	}
	used := it.First()
	err = it.Close()
	switch {
	case err != nil:
		return storeErr(err)
	case used:
		return fmt.Errorf("pebble: %s holds one log opened alone, not a store of logs: %w", dir, engine.ErrWrongEngine)
	}
	return s.db.syncedWrite(func() error { return s.db.pdb.Set(kvlog.FormatKey, kvlog.StoreFormat, pebbledb.Sync) })
}

// Create implements engine.Store.
func (s *Store) Create(engine.LogOptions) (engine.LogID, engine.LogEngine, error) {
	release, err := s.db.use()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, nil, engine.ErrClosed
	}
	id := s.next
	// Under mu, so that the next keys reach pebble in order.
	err = s.commit(func(b *pebbledb.Batch) error {
		if err := b.Set(kvlog.LogKey(id), kvlog.LiveLog, nil); err != nil {
			return err
		}
		return b.Set(kvlog.NextKey, kvlog.EncodeOffset(int64(id)+1), nil)
	})
	var e *Engine
	if err == nil {
		s.next = id + 1
		s.logs[id] = true
		e = s.newLog(id)
	}
	s.mu.Unlock()
	if err == nil {
		err = s.db.committed(context.Background())
	}
	if err != nil {
		if e != nil {
			s.release(e)
		}
		return 0, nil, fmt.Errorf("pebble: create log %s: %w", id, err)
	}
	return id, e, nil
}

// newLog is the handle on log id, an empty log or one to recover, opened;
// the caller holds mu.
func (s *Store) newLog(id engine.LogID) *Engine {
	e := newLog(s.db, kvlog.LogSpace(id))
	e.store, e.id = s, id
	s.open[id] = e
	return e
}

// commit writes a batch fill makes, without a sync of its own.
func (s *Store) commit(fill func(b *pebbledb.Batch) error) error {
	if err := s.db.stickyErr(); err != nil {
		return err
	}
	b := s.db.pdb.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return err
	}
	return s.db.write(func() error { return b.Commit(pebbledb.NoSync) })
}

// Open implements engine.Store.
func (s *Store) Open(id engine.LogID, _ engine.LogOptions) (engine.LogEngine, error) {
	release, err := s.db.use()
	if err != nil {
		return nil, err
	}
	defer release()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, engine.ErrClosed
	case !s.logs[id]:
		return nil, fmt.Errorf("pebble: log %s: %w", id, engine.ErrNoLog)
	case s.open[id] != nil:
		return nil, fmt.Errorf("pebble: log %s: %w", id, engine.ErrLogInUse)
	}
	e := s.newLog(id)
	if err := e.recover(); err != nil {
		delete(s.open, id)
		return nil, fmt.Errorf("pebble: open log %s: %w", id, err)
	}
	return e, nil
}

// Delete implements engine.Store.
func (s *Store) Delete(id engine.LogID) error {
	release, err := s.db.use()
	if err != nil {
		return err
	}
	defer release()
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return engine.ErrClosed
	case !s.logs[id]:
		s.mu.Unlock()
		return fmt.Errorf("pebble: delete log %s: %w", id, engine.ErrNoLog)
	case s.open[id] != nil:
		s.mu.Unlock()
		return fmt.Errorf("pebble: delete log %s: %w", id, engine.ErrLogInUse)
	}
	sp := kvlog.LogSpace(id)
	err = s.commit(func(b *pebbledb.Batch) error {
		if err := b.DeleteRange(sp.Lower(), sp.Upper(), nil); err != nil {
			return err
		}
		return b.Delete(kvlog.LogKey(id), nil)
	})
	if err == nil {
		delete(s.logs, id)
	}
	s.mu.Unlock()
	if err == nil {
		err = s.db.committed(context.Background())
	}
	if err != nil {
		return fmt.Errorf("pebble: delete log %s: %w", id, err)
	}
	return nil
}

// Logs implements engine.Store.
func (s *Store) Logs() ([]engine.LogID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	return slices.Sorted(maps.Keys(s.logs)), nil
}

// release forgets e, closed.
func (s *Store) release(e *Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[e.id] == e {
		delete(s.open, e.id)
	}
}

// Close implements engine.Store: the logs left open are closed, then the
// database.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return engine.ErrClosed
	}
	s.closed = true
	open := slices.Collect(maps.Values(s.open))
	s.mu.Unlock()
	var first error
	for _, e := range open {
		if err := e.Close(); err != nil && !errors.Is(err, engine.ErrClosed) && first == nil {
			first = err
		}
	}
	if err := s.db.close(); err != nil && first == nil {
		first = err
	}
	return first
}
