package pebble_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/pebble"
)

// TestWALRotationOnAFailingDisk fills memtables, without ever calling Sync,
// on a disk whose WAL syncs fail: the first failing sync is the one pebble
// makes when it closes the full memtable's WAL to rotate to a new one. Pebble
// panics if that close fails, with its DB mutex released under a deferred
// unlock, and the Go runtime then ends the process ("sync: unlock of
// unlocked mutex"), which no recover can stop: the crash suite's seed 777
// under -crash.long. The engine must instead refuse appends with the error,
// close, and leave a log that reopens.
func TestWALRotationOnAFailingDisk(t *testing.T) {
	fs := newWALFS(false)
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	fs.failing.Store(true)

	// Pebble's first memtable is 256 KiB; appending 64 MiB goes through
	// several rotations if nothing stops it.
	var appendErr error
	for i := 0; i < 1024 && appendErr == nil; i++ {
		appendErr = e.Append(enginetest.Batch(e.EndOffset(), 1, 64<<10))
	}
	require.Error(t, appendErr, "appends are refused once the WAL cannot be synced")
	assert.ErrorIs(t, appendErr, errorfs.ErrInjected, "the error says why")
	end := e.EndOffset()
	got, err := e.Read(0, 0)
	require.NoError(t, err, "reads still work")
	require.NoError(t, enginetest.Check(got[0]))

	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		assert.Error(t, err, "Close reports the failure")
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs after a failed WAL rotation")
	}

	fs.failing.Store(false)
	r, err := pebble.Open("/p0", engine.Options{FS: fs.mem})
	require.NoError(t, err)
	defer r.Close()
	assert.LessOrEqual(t, r.EndOffset(), end, "nothing appears that was not appended")
	readAll(t, r)
}
