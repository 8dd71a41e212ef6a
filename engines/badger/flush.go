package badger

import (
	"errors"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"
)

// flushLoop is the group commit: each round commits everything pending in
// every log, and the store's own writes, in one synced transaction. It
// runs one more round when the database stops, for the store writes
// queued before it did.
func (d *db) flushLoop() {
	defer d.workers.Done()
	for {
		select {
		case <-d.stop:
			d.round()
			return
		case <-d.kick:
		}
		d.round()
	}
}

// round commits what every open log has pending, and the store writes
// queued, in one transaction (more only past Badger's limit), which
// SyncWrites makes durable with one pair of fsyncs, then releases every
// waiter it covers. A log busy with its own commit (a Truncate, a
// DeleteBefore, its Close) is left out: the appends numbered from its
// first pending one on are not covered this round, whatever the others'.
func (d *db) round() {
	d.mu.Lock()
	if d.failed.Load() != nil {
		meta := d.meta
		d.meta = nil
		d.mu.Unlock()
		finish(meta, d.sticky())
		return
	}
	covered := d.seq.Load()
	logs := make([]*Engine, 0, len(d.logs))
	for l := range d.logs {
		logs = append(logs, l)
	}
	meta := d.meta
	d.meta = nil
	d.mu.Unlock()

	var taken []*Engine
	var lists [][]pendingBatch
	for _, l := range logs {
		if !l.flushMu.TryLock() {
			if first := l.firstPending(); first != 0 && first <= covered {
				covered = first - 1
			}
			continue
		}
		if p := l.pendingList(); len(p) > 0 {
			taken, lists = append(taken, l), append(lists, p)
			continue
		}
		l.flushMu.Unlock()
	}
	err := d.commitRound(taken, lists, meta)
	for _, l := range taken {
		l.flushMu.Unlock()
	}
	finish(meta, err)
	d.mu.Lock()
	if err == nil {
		d.durable = max(d.durable, covered)
	}
	d.broadcastLocked()
	d.mu.Unlock()
}

func finish(meta []*metaWrite, err error) {
	for _, w := range meta {
		w.err = err
		close(w.done)
	}
}

// commitRound commits lists, the pending batches of logs (whose flushMu
// the caller holds), and the store writes meta, as one sync round, then
// moves each log's committed end. A failure is sticky.
func (d *db) commitRound(logs []*Engine, lists [][]pendingBatch, meta []*metaWrite) error {
	if len(logs) == 0 && len(meta) == 0 {
		return nil
	}
	for _, list := range lists {
		for _, p := range list {
			d.meter.Appended(len(p.value) - valueHeader)
		}
	}
	round := d.meter.Begin()
	err := d.commit(func(put func(key, value []byte) error) error {
		for _, w := range meta {
			for _, kv := range w.kvs {
				if err := put(kv.key, kv.value); err != nil {
					return err
				}
			}
		}
		for i, l := range logs {
			for _, p := range lists[i] {
				if err := put(l.sp.BatchKey(p.base), p.value); err != nil {
					return err
				}
			}
		}
		return nil
	})
	// Reported before the waiters hear of the new durable end, so that a
	// Sync that returns has been counted.
	round.End(err)
	if err != nil {
		err = fmt.Errorf("commit: %w", err)
		d.fail(err)
		return err
	}
	for i, l := range logs {
		l.committedList(lists[i])
	}
	return nil
}

// commit runs fill in a write transaction and commits it; when Badger says
// the transaction is full, it commits and goes on in a new one. Each commit
// is synced (SyncWrites). Badger failures it only logged count too. A
// DropPrefix blocks it: Badger refuses writes while one runs.
func (d *db) commit(fill func(put func(key, value []byte) error) error) error {
	d.dropMu.RLock()
	defer d.dropMu.RUnlock()
	txn := d.bdb.NewTransaction(true)
	defer func() { txn.Discard() }()
	write := func(key, value []byte, del bool) error {
		for range 2 {
			var err error
			if del {
				err = txn.Delete(key)
			} else {
				err = txn.Set(key, value)
			}
			if !errors.Is(err, badgerdb.ErrTxnTooBig) {
				return err
			}
			if err := d.commitTxn(txn); err != nil {
				return err
			}
			txn = d.bdb.NewTransaction(true)
		}
		return fmt.Errorf("key %x does not fit in an empty transaction", key)
	}
	err := fill(func(key, value []byte) error { return write(key, value, value == nil) })
	if err != nil {
		return err
	}
	return d.commitTxn(txn)
}

func (d *db) commitTxn(txn *badgerdb.Txn) error {
	if err := txn.Commit(); err != nil {
		return err
	}
	return d.log.err()
}
