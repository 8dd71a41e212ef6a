package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoreFollowers: a broker that follows the log (not a voter) gets the
// batches after its offset from Since, or is told to restore the snapshot
// when it is older than what the Store keeps; applying what it got gives
// the same image.
func TestStoreFollowers(t *testing.T) {
	src, dst := NewStore(), NewStore()
	batch := func(recs ...Record) []byte {
		b, err := EncodeBatch(recs)
		require.NoError(t, err)
		return b
	}
	require.NoError(t, src.Apply(1, batch(Record{Bootstrap: &Bootstrap{ClusterID: "c"}})))
	require.NoError(t, src.Apply(3, batch(Record{Barrier: &Barrier{}}))) // raft's own entries leave gaps
	require.NoError(t, src.Apply(4, batch(Record{RegisterBroker: &RegisterBroker{ID: 1, Host: "h", Port: 1}})))
	got, ok := src.Since(dst.Image().Offset()+1, 1<<20)
	require.True(t, ok)
	require.Len(t, got, 3)
	for _, e := range got {
		require.NoError(t, dst.Apply(e.Offset, e.Payload))
	}
	require.Equal(t, dump(src.Image()), dump(dst.Image()))
	got, ok = src.Since(5, 1<<20)
	require.True(t, ok)
	require.Empty(t, got, "nothing new")

	snap, err := src.Snapshot()
	require.NoError(t, err)
	restored := NewStore()
	require.NoError(t, restored.Restore(10, snap))
	_, ok = restored.Since(4, 1<<20)
	require.False(t, ok, "older than the snapshot: restore it")
	_, ok = restored.Since(11, 1<<20)
	require.True(t, ok)
}
