package pebble

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// A log opened alone and a store are not mistaken for each other.
func TestStoreAndLoneLogApart(t *testing.T) {
	fs := vfs.NewMem()
	e, err := Open("/alone", engine.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, e.Append(enginetest.Batch(0, 1, 100)))
	require.NoError(t, e.Close())
	_, err = OpenStore("/alone", engine.Options{FS: fs})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "a lone log's database is not a store")

	s, err := OpenStore("/store", engine.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = Open("/store", engine.Options{FS: fs})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "a store is not a lone log")
}

// Delete leaves no key of the log in the database, and none of another's
// goes with it.
func TestStoreDeleteDropsTheLogsKeys(t *testing.T) {
	s, err := OpenStore("/store", engine.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer s.Close()
	var ids []engine.LogID
	for range 3 {
		id, e, err := s.Create(engine.LogOptions{})
		require.NoError(t, err)
		for range 20 {
			require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 2, 300)))
		}
		require.NoError(t, e.DeleteBefore(5))
		require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
		require.NoError(t, e.Close())
		ids = append(ids, id)
	}
	require.NoError(t, s.Delete(ids[1]))
	keys := func(id engine.LogID) int {
		sp := kvlog.LogSpace(id)
		it, err := s.db.pdb.NewIter(nil)
		require.NoError(t, err)
		defer it.Close()
		n := 0
		for ok := it.SeekGE(sp.Lower()); ok && string(it.Key()) < string(sp.Upper()); ok = it.Next() {
			n++
		}
		return n
	}
	assert.Zero(t, keys(ids[1]), "the deleted log's batches and start are gone")
	assert.Equal(t, 18+1, keys(ids[0]), "another log keeps its 18 batches from 4 on and its start")
	assert.Equal(t, 18+1, keys(ids[2]))
}
