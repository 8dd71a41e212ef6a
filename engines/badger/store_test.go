package badger

import (
	"testing"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// countKeys counts the keys of log id in the store.
func countKeys(t *testing.T, s *Store, id engine.LogID) int {
	n := 0
	require.NoError(t, s.db.bdb.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: kvlog.LogSpace(id).Prefix()})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	}))
	return n
}

// A log marked deleting when the store closed (a crash between Delete and
// its drop) is not listed by the next open, and its keys are dropped; the
// other log keeps its own.
func TestOpenDropsALogLeftDeleting(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, engine.Options{})
	require.NoError(t, err)
	var ids []engine.LogID
	for range 2 {
		id, e, err := s.Create(engine.LogOptions{})
		require.NoError(t, err)
		for range 10 {
			require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 1, 500)))
		}
		require.NoError(t, e.Close())
		ids = append(ids, id)
	}
	require.NoError(t, s.db.write(keyValue{kvlog.LogKey(ids[0]), deletingLog}))
	require.NoError(t, s.Close())

	s, err = OpenStore(dir, engine.Options{})
	require.NoError(t, err)
	defer s.Close()
	logs, err := s.Logs()
	require.NoError(t, err)
	assert.Equal(t, ids[1:], logs, "a log being deleted is not listed")
	require.Eventually(t, func() bool { return countKeys(t, s, ids[0]) == 0 }, 10*time.Second, 10*time.Millisecond,
		"its keys are dropped in the background")
	assert.Equal(t, 10, countKeys(t, s, ids[1]), "the other log's batches stay")
	require.Eventually(t, func() bool { _, ok, _ := s.db.get(kvlog.LogKey(ids[0])); return !ok }, 10*time.Second, 10*time.Millisecond,
		"its log key goes once it is dropped")
}

// A log opened alone and a store are not mistaken for each other.
func TestStoreAndLoneLogApart(t *testing.T) {
	alone, store := t.TempDir(), t.TempDir()
	e, err := Open(alone, engine.Options{})
	require.NoError(t, err)
	require.NoError(t, e.Append(enginetest.Batch(0, 1, 100)))
	require.NoError(t, e.Close())
	_, err = OpenStore(alone, engine.Options{})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "a lone log's database is not a store")
	s, err := OpenStore(store, engine.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = Open(store, engine.Options{})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "a store is not a lone log")
}
