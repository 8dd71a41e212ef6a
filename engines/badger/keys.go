package badger

import (
	"errors"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// cutKey holds the offset a Truncate cuts the log at (an offset value, see
// engines/kvlog), while the Truncate's deletions, which may span
// transactions, are under way: the log's meta key 't'.
func (e *Engine) cutKey() []byte { return e.sp.MetaKey('t') }

// getOffset reads the start key or cutKey; ok is false when it is absent.
func (e *Engine) getOffset(key []byte) (off int64, ok bool, err error) {
	v, ok, err := e.db.get(key)
	if err != nil || !ok {
		return 0, false, err
	}
	off, err = kvlog.DecodeOffset(v)
	return off, err == nil, err
}

// batchAtOrBelow returns the stored batch with the greatest base offset at
// or below offset; ok is false when there is none.
func (e *Engine) batchAtOrBelow(offset int64) (b engine.Batch, ok bool, err error) {
	err = e.db.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Reverse: true, Prefix: e.sp.BatchSpace()})
		defer it.Close()
		it.Seek(e.sp.BatchKey(offset))
		if !it.ValidForPrefix(e.sp.BatchSpace()) {
			return nil
		}
		b, err = e.decodeItem(it.Item())
		ok = err == nil
		return err
	})
	return b, ok, err
}

func (e *Engine) decodeItem(item *badgerdb.Item) (engine.Batch, error) {
	v, err := item.ValueCopy(nil)
	if err != nil {
		return engine.Batch{}, storeErr(err)
	}
	return e.sp.DecodeBatch(item.Key(), v)
}

// readStore gathers into c the stored batches from the one holding c.Offset
// up to committed.
func (e *Engine) readStore(c *kvlog.Collector, committed int64) error {
	first, ok, err := e.batchAtOrBelow(c.Offset)
	if err != nil || !ok {
		return err
	}
	return e.db.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: e.sp.BatchSpace()})
		defer it.Close()
		for it.Seek(e.sp.BatchKey(first.BaseOffset)); it.ValidForPrefix(e.sp.BatchSpace()); it.Next() {
			if base, _ := e.sp.KeyBase(it.Item().Key()); base >= committed {
				break
			}
			b, err := e.decodeItem(it.Item())
			if err != nil {
				return err
			}
			if c.Full(len(b.Data)) {
				break
			}
			if more, err := c.Add(b); err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// deleteBatches deletes the stored batch keys in [from, to), newest first if
// newestFirst, in as many synced transactions as it takes. first is written
// in the first transaction and last in the final one (a nil value deletes).
func (e *Engine) deleteBatches(from, to int64, newestFirst bool, first, last *keyValue) error {
	keys, err := e.batchKeys(from, to)
	if err != nil {
		return err
	}
	if newestFirst {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return e.db.commit(func(put func(key, value []byte) error) error {
		if first != nil {
			if err := put(first.key, first.value); err != nil {
				return err
			}
		}
		for _, k := range keys {
			if err := put(k, nil); err != nil {
				return err
			}
		}
		if last != nil {
			return put(last.key, last.value)
		}
		return nil
	})
}

// batchKeys lists the stored batch keys in [from, to).
func (e *Engine) batchKeys(from, to int64) ([][]byte, error) {
	var keys [][]byte
	err := e.db.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: e.sp.BatchSpace()})
		defer it.Close()
		for it.Seek(e.sp.BatchKey(from)); it.ValidForPrefix(e.sp.BatchSpace()); it.Next() {
			if base, ok := e.sp.KeyBase(it.Item().Key()); !ok || base >= to {
				break
			}
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	return keys, err
}

// recover reads the log's bounds from the store, first finishing what a
// crash interrupted: a Truncate (cutKey present) and the deletions of a
// DeleteBefore (batches wholly below the start).
func (e *Engine) recover() error {
	start, _, err := e.getOffset(e.sp.StartKey())
	if err != nil {
		return fmt.Errorf("read start offset: %w", err)
	}
	if cut, ok, err := e.getOffset(e.cutKey()); err != nil {
		return fmt.Errorf("read truncation point: %w", err)
	} else if ok {
		e.db.log.log.Info("badger: finishing an interrupted truncation", "at", cut)
		if err := e.deleteBatches(cut, 1<<63-1, true, nil, &keyValue{key: e.cutKey()}); err != nil {
			return fmt.Errorf("finish truncation at %d: %w", cut, err)
		}
	}
	if start > 0 {
		// Keep the batch holding start; drop everything wholly below it.
		keep := start
		if b, ok, err := e.batchAtOrBelow(start); err != nil {
			return fmt.Errorf("find the batch holding the start %d: %w", start, err)
		} else if ok && b.NextOffset() > start {
			keep = b.BaseOffset
		}
		if err := e.deleteBatches(0, keep, false, nil, nil); err != nil {
			return fmt.Errorf("delete batches below the start %d: %w", start, err)
		}
	}
	end := start
	if b, ok, err := e.batchAtOrBelow(1<<63 - 1); err != nil {
		return fmt.Errorf("find the last batch: %w", err)
	} else if ok {
		end = max(end, b.NextOffset())
	}
	e.setStartLocked(start)
	e.setEndLocked(end)
	e.committed = end
	return nil
}

// get reads key; ok is false when it is absent. The value is a copy.
func (d *db) get(key []byte) (v []byte, ok bool, err error) {
	err = d.bdb.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		ok = err == nil
		return err
	})
	return v, ok, err
}
