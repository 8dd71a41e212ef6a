package badger

import (
	"errors"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/minikafka/minikafka/engine"
)

var batchSpace = []byte{batchPrefix}

// getOffset reads startKey or cutKey; ok is false when it is absent.
func (e *Engine) getOffset(key []byte) (off int64, ok bool, err error) {
	err = e.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		off, err = decodeOffset(v)
		ok = err == nil
		return err
	})
	return off, ok, err
}

// batchAtOrBelow returns the stored batch with the greatest base offset at
// or below offset; ok is false when there is none.
func (e *Engine) batchAtOrBelow(offset int64) (b engine.Batch, ok bool, err error) {
	err = e.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Reverse: true, Prefix: batchSpace})
		defer it.Close()
		it.Seek(batchKey(offset))
		if !it.ValidForPrefix(batchSpace) {
			return nil
		}
		b, err = decodeItem(it.Item())
		ok = err == nil
		return err
	})
	return b, ok, err
}

func decodeItem(item *badgerdb.Item) (engine.Batch, error) {
	v, err := item.ValueCopy(nil)
	if err != nil {
		return engine.Batch{}, storeErr(err)
	}
	return decodeBatch(item.Key(), v)
}

// readStore returns the stored batches from the one holding offset up to
// committed, as many as fit in maxBytes but at least one, and their size.
func (e *Engine) readStore(offset, committed int64, maxBytes int) (out []engine.Batch, size int, err error) {
	first, ok, err := e.batchAtOrBelow(offset)
	if err != nil || !ok || first.NextOffset() <= offset {
		return nil, 0, err
	}
	err = e.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: batchSpace})
		defer it.Close()
		for it.Seek(batchKey(first.BaseOffset)); it.ValidForPrefix(batchSpace); it.Next() {
			base, _ := keyBase(it.Item().Key())
			if base >= committed {
				break
			}
			b, err := decodeItem(it.Item())
			if err != nil {
				return err
			}
			if len(out) > 0 && (size+len(b.Data) > maxBytes || b.BaseOffset != out[len(out)-1].NextOffset()) {
				if b.BaseOffset != out[len(out)-1].NextOffset() {
					return fmt.Errorf("batch %d follows one ending at %d: %w", b.BaseOffset, out[len(out)-1].NextOffset(), engine.ErrCorrupt)
				}
				break
			}
			size += len(b.Data)
			out = append(out, b)
		}
		return nil
	})
	return out, size, err
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
	return e.commit(func(put func(key, value []byte) error) error {
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

type keyValue struct{ key, value []byte }

// batchKeys lists the stored batch keys in [from, to).
func (e *Engine) batchKeys(from, to int64) ([][]byte, error) {
	var keys [][]byte
	err := e.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: batchSpace})
		defer it.Close()
		for it.Seek(batchKey(from)); it.ValidForPrefix(batchSpace); it.Next() {
			if base, ok := keyBase(it.Item().Key()); !ok || base >= to {
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
	start, _, err := e.getOffset(startKey)
	if err != nil {
		return fmt.Errorf("read start offset: %w", err)
	}
	if cut, ok, err := e.getOffset(cutKey); err != nil {
		return fmt.Errorf("read truncation point: %w", err)
	} else if ok {
		e.log.log.Info("badger: finishing an interrupted truncation", "at", cut)
		if err := e.deleteBatches(cut, 1<<63-1, true, nil, &keyValue{key: cutKey}); err != nil {
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
	e.committed, e.durable = end, end
	return nil
}
