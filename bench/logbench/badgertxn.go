package logbench

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// BadgerTxnName names the badger baseline without a group commit of its own.
const BadgerTxnName = "badger-txn"

// BadgerTxnSubject measures badger as it comes: SyncWrites on and every
// writer committing its own transaction of one record, so each durable
// append is one synced commit. It shows what the badger engine's own group
// commit is there to beat. Only durable append is measured.
func BadgerTxnSubject() Subject {
	return Subject{
		Name:    BadgerTxnName,
		Note:    "baseline: badger/v4 default options, SyncWrites, one transaction per record",
		Durable: true,
		Writer:  func(dir string) (Writer, error) { return openBadgerTxn(dir) },
	}
}

type badgerTxn struct {
	db  *badger.DB
	seq atomic.Uint64
}

func openBadgerTxn(dir string) (*badgerTxn, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil))
	if err != nil {
		return nil, fmt.Errorf("badger-txn: open %s: %w", dir, err)
	}
	return &badgerTxn{db: db}, nil
}

func (b *badgerTxn) Write(rec []byte) error {
	key := binary.BigEndian.AppendUint64(nil, b.seq.Add(1))
	if err := b.db.Update(func(txn *badger.Txn) error { return txn.Set(key, rec) }); err != nil {
		return fmt.Errorf("badger-txn: commit: %w", err)
	}
	return nil
}

func (b *badgerTxn) Close() error { return b.db.Close() }
