package segment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// TestStoreOfMarkedLogs: a store whose logs' directories hold a marker of
// their own (made before the driver had OpenInStore) opens as it is and
// serves them; logs created since have no marker.
func TestStoreOfMarkedLogs(t *testing.T) {
	fs := newMem(t)
	opts := engine.Options{FS: fs}
	older := Driver
	older.OpenInStore = nil
	s, err := engine.OpenDirStore(older, "store", opts)
	require.NoError(t, err)
	id, l, err := s.Create(engine.LogOptions{})
	require.NoError(t, err)
	b := enginetest.Batch(0, 3, 100)
	require.NoError(t, l.Append(b))
	require.NoError(t, l.Sync(context.Background(), b.NextOffset()))
	require.NoError(t, l.Close())
	require.NoError(t, s.Close())
	_, err = fs.Stat(fs.PathJoin("store", id.String(), engine.MarkerFile))
	require.NoError(t, err, "the older store's log has its marker")

	s2, err := Driver.OpenStoreIn("store", opts)
	require.NoError(t, err)
	defer s2.Close()
	l, err = s2.Open(id, engine.LogOptions{})
	require.NoError(t, err, "a log with its own marker opens")
	got, err := l.Read(0, 1<<20)
	require.NoError(t, err)
	requireBatches(t, []engine.Batch{b}, got, "the older log's batch")
	require.NoError(t, l.Close())

	id2, l2, err := s2.Create(engine.LogOptions{})
	require.NoError(t, err)
	require.NoError(t, l2.Close())
	_, err = fs.Stat(fs.PathJoin("store", id2.String(), engine.MarkerFile))
	assert.Error(t, err, "a log created now has no marker: the store's speaks for it")
}

// TestStoreAdoptChecksTheMarker: a directory adopted into the store is
// checked once, at adoption, since the store's logs open without a look
// at their markers: another engine's is refused and stays where it was.
func TestStoreAdoptChecksTheMarker(t *testing.T) {
	fs := newMem(t)
	opts := engine.Options{FS: fs}
	s, err := Driver.OpenStoreIn("store", opts)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, fs.MkdirAll("old", 0o755))
	require.NoError(t, engine.WriteFileAtomic(fs, fs.PathJoin("old", engine.MarkerFile), []byte("pebble\n")))
	a := s.(engine.Adopter)
	id, err := a.Reserve()
	require.NoError(t, err)
	require.ErrorIs(t, a.Adopt(id, "old"), engine.ErrWrongEngine)
	_, err = fs.Stat("old")
	assert.NoError(t, err, "the refused directory is left in place")
}
