package pebble

import (
	"context"
	"testing"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// TestReadRefusesAHole checks that a read across a hole in the batch keys (a
// store damaged behind the engine's back) is ErrCorrupt, never a later batch
// served in place of a missing one.
func TestReadRefusesAHole(t *testing.T) {
	e, err := Open("/p0", engine.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer e.Close()
	for range 3 {
		require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 2, 100)))
	}
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.NoError(t, e.db.pdb.Delete(kvlog.Space{}.BatchKey(2), pebbledb.Sync))

	got, err := e.Read(0, 100)
	require.NoError(t, err, "a read that stops before the hole")
	assert.Len(t, got, 1)
	_, err = e.Read(0, 1<<20)
	assert.ErrorIs(t, err, engine.ErrCorrupt, "a read across the hole")
	_, err = e.Read(2, 1<<20)
	assert.ErrorIs(t, err, engine.ErrOffsetOutOfRange, "a read inside the hole finds no batch holding the offset")
}
