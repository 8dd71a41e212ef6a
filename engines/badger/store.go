package badger

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// Store is every partition log of a data directory in one Badger database
// (engine.Store): each log's keys are prefixed by its id (kvlog.LogSpace),
// the store keeps which logs exist and the next id in keys of its own, and
// one flusher commits every log's pending batches together, so that a
// round's pair of fsyncs serves every partition.
//
// Create writes its log key and the next id with the next round. Delete
// marks the log key deleting (deletingLog) with the next round and
// returns: the log is gone from Logs from then on, and a goroutine of the
// store drops its keys with Badger's DropPrefix, several logs' at once
// when several wait, then deletes the log key. DropPrefix stops every
// write to the database while it runs (it flushes the memtables and drops
// the tables that hold only the prefix, rewriting those that hold more),
// so deleted logs are dropped one batch of them at a time, in the
// background; an open drops those a crash left marked. Their value log
// space comes back with value log garbage collection.
type Store struct {
	db *db

	mu     sync.Mutex
	closed bool
	next   engine.LogID
	logs   map[engine.LogID]bool    // every log of the store, deleted ones not
	open   map[engine.LogID]*Engine // the open ones
}

var _ engine.Store = (*Store)(nil)

// deletingLog is a log key's value while its log is being dropped.
var deletingLog = []byte{'D'}

// dropJob is a deleted log whose keys are still to drop.
type dropJob struct{ id engine.LogID }

// OpenStore opens (or creates) the store in dir.
func OpenStore(dir string, opts engine.Options) (*Store, error) {
	d, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{db: d, logs: map[engine.LogID]bool{}, open: map[engine.LogID]*Engine{}}
	if err := s.load(dir); err != nil {
		d.bdb.Close()
		return nil, err
	}
	d.start()
	d.opts.Logger.Debug("badger: store opened", "dir", dir, "logs", len(s.logs))
	return s, nil
}

// load reads the store's keys, making a new store's format key first, and
// queues the logs a crash left being deleted.
func (s *Store) load(dir string) error {
	d := s.db
	format, ok, err := d.get(kvlog.FormatKey)
	switch {
	case err != nil:
		return fmt.Errorf("badger: open store %s: %w", dir, storeErr(err))
	case !ok:
		if err := s.claim(dir); err != nil {
			return err
		}
	case string(format) != string(kvlog.StoreFormat):
		return fmt.Errorf("badger: store %s: format %q, want %q: %w", dir, format, kvlog.StoreFormat, engine.ErrCorrupt)
	}
	if v, ok, err := d.get(kvlog.NextKey); err != nil {
		return fmt.Errorf("badger: store %s: %w", dir, storeErr(err))
	} else if ok {
		next, err := kvlog.DecodeOffset(v)
		if err != nil {
			return fmt.Errorf("badger: store %s: next log id: %w", dir, err)
		}
		s.next = engine.LogID(next)
	}
	return d.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: kvlog.LogKeys, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id, ok := kvlog.LogKeyID(it.Item().Key())
			v, err := it.Item().ValueCopy(nil)
			switch {
			case err != nil:
				return storeErr(err)
			case !ok || id >= s.next:
				return fmt.Errorf("badger: store %s: log key %x (next id %s): %w", dir, it.Item().Key(), s.next, engine.ErrCorrupt)
			case string(v) == string(deletingLog):
				d.drops = append(d.drops, dropJob{id})
			default:
				s.logs[id] = true
			}
		}
		return nil
	})
}

// claim makes the database a store: it must hold nothing yet (a log
// opened alone with Open holds its batches without a prefix).
func (s *Store) claim(dir string) error {
	used := false
	err := s.db.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{})
		defer it.Close()
		it.Rewind()
		used = it.Valid()
		return nil
	})
	switch {
	case err != nil:
		return storeErr(err)
	case used:
		return fmt.Errorf("badger: %s holds one log opened alone, not a store of logs: %w", dir, engine.ErrWrongEngine)
	}
	return s.db.commit(func(put func(key, value []byte) error) error { return put(kvlog.FormatKey, kvlog.StoreFormat) })
}

// Create implements engine.Store.
func (s *Store) Create(engine.LogOptions) (engine.LogID, engine.LogEngine, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, nil, engine.ErrClosed
	}
	// Taken now, written with the next round: a crash before that round
	// leaves neither the log nor the next id, and this id unused. Queued
	// under mu, so that the next ids commit in order.
	id := s.next
	w, err := s.db.queue(keyValue{kvlog.LogKey(id), kvlog.LiveLog}, keyValue{kvlog.NextKey, kvlog.EncodeOffset(int64(id) + 1)})
	if err == nil {
		s.next++
	}
	s.mu.Unlock()
	if err == nil {
		err = w.wait()
	}
	if err != nil {
		return 0, nil, fmt.Errorf("badger: create log %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, nil, engine.ErrClosed
	}
	s.logs[id] = true
	return id, s.newLog(id), nil
}

// newLog is the handle on log id, registered; the caller holds mu.
func (s *Store) newLog(id engine.LogID) *Engine {
	e := newLog(s.db, kvlog.LogSpace(id))
	e.store, e.id = s, id
	s.open[id] = e
	s.db.register(e)
	return e
}

// Open implements engine.Store.
func (s *Store) Open(id engine.LogID, _ engine.LogOptions) (engine.LogEngine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, engine.ErrClosed
	case !s.logs[id]:
		return nil, fmt.Errorf("badger: log %s: %w", id, engine.ErrNoLog)
	case s.open[id] != nil:
		return nil, fmt.Errorf("badger: log %s: %w", id, engine.ErrLogInUse)
	}
	e := newLog(s.db, kvlog.LogSpace(id))
	if err := e.recover(); err != nil {
		return nil, fmt.Errorf("badger: open log %s: %w", id, storeErr(err))
	}
	e.store, e.id = s, id
	s.open[id] = e
	s.db.register(e)
	return e, nil
}

// Delete implements engine.Store.
func (s *Store) Delete(id engine.LogID) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return engine.ErrClosed
	case !s.logs[id]:
		s.mu.Unlock()
		return fmt.Errorf("badger: delete log %s: %w", id, engine.ErrNoLog)
	case s.open[id] != nil:
		s.mu.Unlock()
		return fmt.Errorf("badger: delete log %s: %w", id, engine.ErrLogInUse)
	}
	delete(s.logs, id)
	s.mu.Unlock()
	if err := s.db.write(keyValue{kvlog.LogKey(id), deletingLog}); err != nil {
		return fmt.Errorf("badger: delete log %s: %w", id, err)
	}
	s.db.queueDrop(dropJob{id})
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
		if err := e.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := s.db.close(); err != nil && first == nil {
		first = err
	}
	return first
}

func (d *db) queueDrop(j dropJob) {
	d.mu.Lock()
	d.drops = append(d.drops, j)
	d.mu.Unlock()
	select {
	case d.dropped <- struct{}{}:
	default:
	}
}

// dropLoop drops the keys of deleted logs, every log waiting at once, then
// deletes their log keys; it starts with those an open found.
func (d *db) dropLoop() {
	defer d.workers.Done()
	for {
		d.mu.Lock()
		jobs := d.drops
		d.drops = nil
		d.mu.Unlock()
		if len(jobs) > 0 {
			d.drop(jobs)
			continue
		}
		select {
		case <-d.stop:
			return
		case <-d.dropped:
		}
	}
}

// drop drops the keys of jobs' logs; a failure leaves them marked for the
// next open.
func (d *db) drop(jobs []dropJob) {
	prefixes := make([][]byte, len(jobs))
	keys := make([]keyValue, len(jobs))
	for i, j := range jobs {
		prefixes[i] = kvlog.LogSpace(j.id).Prefix()
		keys[i] = keyValue{key: kvlog.LogKey(j.id)}
	}
	d.dropMu.Lock()
	err := d.bdb.DropPrefix(prefixes...)
	d.dropMu.Unlock()
	if err != nil {
		d.log.log.Warn("badger: dropping deleted logs failed; the next open retries", "logs", len(jobs), "err", err)
		return
	}
	if err := d.write(keys...); err != nil && err != engine.ErrClosed {
		d.log.log.Warn("badger: forgetting dropped logs failed; the next open drops them again", "err", err)
	}
}
