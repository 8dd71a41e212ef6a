package pebble_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
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
	enginetest.ReadAll(t, r, 1<<20)
}

// TestFailedOpenLeavesNothingBehind opens a store with a WAL to replay on a
// disk that dies at its n-th write, for many n: from then on every call
// fails, reads included, as in the crash suite's CallsFail. Pebble's Open
// cannot be left like that: it never returns while its flush of the
// recovered WAL fails, and when it fails late it leaves goroutines running
// (one of them retrying in a tight loop) on a DB nobody can close. The
// engine abandons such an Open, and every goroutine it started must end.
func TestFailedOpenLeavesNothingBehind(t *testing.T) {
	crashed := storeToRecover(t)
	// A clean open and close first, so that what lives for the whole process
	// (the shared caches) is counted in the baseline.
	e, err := pebble.Open("/p0", engine.Options{FS: cloneDisk(crashed)})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	baseline := runtime.NumGoroutine()

	failures := 0
	for n := 1; n <= 40; n++ {
		var writes atomic.Int64
		var dead atomic.Bool
		fs := errorfs.Wrap(cloneDisk(crashed), errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && writes.Add(1) == int64(n) {
				dead.Store(true)
			}
			if dead.Load() {
				return errorfs.ErrInjected
			}
			return nil
		}))
		e, err := pebble.Open("/p0", engine.Options{FS: fs})
		if err != nil {
			failures++
			continue
		}
		_ = e.Close()
	}
	require.Greater(t, failures, 10, "most of those opens fail")
	// Polled here rather than with assert.Eventually, whose own goroutine
	// would count.
	left := runtime.NumGoroutine()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); left > baseline && time.Now().Before(deadline); left = runtime.NumGoroutine() {
		<-tick.C
	}
	if !assert.LessOrEqual(t, left, baseline, "the goroutines of failed opens end") {
		buf := make([]byte, 1<<20)
		t.Logf("goroutines left:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// storeToRecover returns a disk holding a store whose last batches are only
// in its WAL: written and synced, then the process died.
func storeToRecover(t *testing.T) *vfs.MemFS {
	fs := vfs.NewCrashableMem()
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	for range 20 {
		require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 2, 1000)))
	}
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, e.Close())
	return crashed
}

// cloneDisk is an exact copy of a disk.
func cloneDisk(m *vfs.MemFS) *vfs.MemFS {
	return m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(3, 4))})
}
