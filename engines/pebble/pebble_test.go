package pebble_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/pebble"
)

func TestConformance(t *testing.T) { enginetest.Run(t, pebble.Driver) }

// walFS wraps a MemFS, counts the syncs of pebble's WAL files and fails WAL
// syncs, and writes too if failWrites, while failing is set.
type walFS struct {
	*errorfs.FS
	mem     *vfs.MemFS
	syncs   atomic.Int64
	failing atomic.Bool
}

func newWALFS(failWrites bool) *walFS {
	w := &walFS{mem: vfs.NewMem()}
	w.FS = errorfs.Wrap(w.mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if w.failing.Load() {
				return errorfs.ErrInjected
			}
			w.syncs.Add(1)
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt:
			if failWrites && w.failing.Load() {
				return errorfs.ErrInjected
			}
		}
		return nil
	}))
	return w
}

func TestCustomFSReopen(t *testing.T) {
	fs := vfs.NewMem()
	opts := engine.Options{FS: fs}
	e, err := pebble.Open("/p0", opts)
	require.NoError(t, err)
	var want []engine.Batch
	for range 20 {
		b := enginetest.Batch(e.EndOffset(), 3, 500)
		require.NoError(t, e.Append(b))
		want = append(want, b)
	}
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.NoError(t, e.Close())

	e, err = pebble.Open("/p0", opts)
	require.NoError(t, err)
	defer e.Close()
	got, err := e.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, want, got, "a log on a custom filesystem survives reopen")
}

// TestSyncPolicies checks when each policy syncs pebble's WAL: Sync under
// every policy (pebble keeps a write it does not sync in memory until its
// WAL block fills, so a Sync that promises a process crash spares it must
// sync), the clock too under interval, and Close.
func TestSyncPolicies(t *testing.T) {
	const interval = 50 * time.Millisecond
	for _, c := range []struct {
		policy  engine.SyncPolicy
		byClock bool
	}{
		{engine.SyncAlways, false},
		{engine.SyncInterval, true},
		{engine.SyncNever, false},
	} {
		t.Run(c.policy.String(), func(t *testing.T) {
			fs := newWALFS(true)
			clk := clock.NewManual(time.Unix(0, 0))
			e, err := pebble.Open("/p0", engine.Options{FS: fs, Sync: c.policy, SyncInterval: interval, Clock: clk})
			require.NoError(t, err)
			require.NoError(t, e.Append(enginetest.Batch(0, 1, 100)))

			before := fs.syncs.Load()
			require.NoError(t, e.Sync(context.Background(), 1))
			assert.Greater(t, fs.syncs.Load(), before, "Sync under %s syncs the WAL", c.policy)

			require.NoError(t, e.Append(enginetest.Batch(1, 1, 100)))
			before = fs.syncs.Load()
			clk.Advance(interval)
			if c.byClock {
				require.Eventually(t, func() bool { return fs.syncs.Load() > before }, 5*time.Second, time.Millisecond,
					"under %s the clock reaching the interval syncs the WAL", c.policy)
			} else {
				assert.Equal(t, before, fs.syncs.Load(), "under %s the clock does not sync", c.policy)
			}

			require.NoError(t, e.Append(enginetest.Batch(2, 1, 100)))
			before = fs.syncs.Load()
			require.NoError(t, e.Close())
			assert.Greater(t, fs.syncs.Load(), before, "Close syncs what was appended")
		})
	}
}

// TestFailedWALSync checks that a WAL that cannot be written or synced is
// reported by Sync and refuses later writes, although pebble itself is told
// the WAL write and sync succeeded (storeFS hides WAL failures from it).
func TestFailedWALSync(t *testing.T) {
	fs := newWALFS(true)
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	synced := enginetest.Batch(0, 2, 100)
	require.NoError(t, e.Append(synced))
	require.NoError(t, e.Sync(context.Background(), 2))

	fs.failing.Store(true)
	_ = e.Append(enginetest.Batch(2, 1, 100)) // may succeed: the WAL write is asynchronous
	err = e.Sync(context.Background(), e.EndOffset())
	require.Error(t, err, "a Sync whose WAL sync fails returns an error")
	assert.ErrorIs(t, err, errorfs.ErrInjected, "the error says why")
	assert.Error(t, e.Sync(context.Background(), e.EndOffset()), "the failure is sticky")
	assert.Error(t, e.Append(enginetest.Batch(e.EndOffset(), 1, 100)), "appends are refused after a failed sync")
	assert.Error(t, e.Truncate(2), "truncation is refused after a failed sync")
	assert.Error(t, e.DeleteBefore(1), "retention is refused after a failed sync")
	got, err := e.Read(0, 0)
	require.NoError(t, err, "reads still work")
	assert.Equal(t, []engine.Batch{synced}, got)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = e.Close()
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs after a failed WAL sync")
	}

	fs.failing.Store(false)
	e, err = pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	defer e.Close()
	got, err = e.Read(0, 0)
	require.NoError(t, err)
	assert.Equal(t, []engine.Batch{synced}, got, "the synced batch survives")
}

// BenchmarkSyncedAppend measures 1 KiB appends, each followed by its own
// Sync, from 1 and 256 writers: the group commit should make 256 writers
// much faster than one.
func BenchmarkSyncedAppend(b *testing.B) {
	for _, writers := range []int{1, 256} {
		b.Run(fmt.Sprintf("%dwriters", writers), func(b *testing.B) {
			e, err := pebble.Open(b.TempDir(), engine.Options{})
			require.NoError(b, err)
			defer e.Close()
			var (
				assign sync.Mutex
				wg     sync.WaitGroup
				next   atomic.Int64
			)
			data := make([]byte, 1024)
			b.ResetTimer()
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						assign.Lock()
						end := e.EndOffset()
						err := e.Append(engine.Batch{BaseOffset: end, Records: 1, Data: data})
						assign.Unlock()
						if err == nil {
							err = e.Sync(context.Background(), end+1)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestRecoveredDataIsDurable checks the engine's claim that what Open
// recovers is durable at once (Sync returns without an fsync): a process
// that dies leaves unsynced WAL data in the page cache, the next Open
// recovers it, and a power loss right after that Open must not lose it.
func TestRecoveredDataIsDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, err := pebble.Open("/p0", engine.Options{FS: fs})
	require.NoError(t, err)
	defer e.Close()
	for range 3 {
		require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 1, 100)))
	}
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	synced := e.EndOffset()
	// Unsynced batches big enough to fill WAL blocks, which pebble writes to
	// the file without being asked to sync.
	for range 8 {
		require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), 2, 20<<10)))
	}

	rng := rand.New(rand.NewPCG(1, 2))
	var (
		killed    *vfs.MemFS
		recovered int64
	)
	require.Eventually(t, func() bool {
		// The process dies: the page cache, and so every written byte, survives.
		killed = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rng})
		r, err := pebble.Open("/p0", engine.Options{FS: killed})
		require.NoError(t, err)
		recovered = r.EndOffset()
		// The power goes out before anything else happens: no Close.
		return recovered > synced
	}, 10*time.Second, time.Millisecond, "pebble writes full WAL blocks to the file before any sync")

	lost := killed.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	r, err := pebble.Open("/p0", engine.Options{FS: lost})
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, recovered, r.EndOffset(), "what Open recovered survives a power loss right after it")
	for off := r.StartOffset(); off < r.EndOffset(); {
		bs, err := r.Read(off, 0)
		require.NoError(t, err)
		require.NoError(t, enginetest.Check(bs[0]))
		off = bs[0].NextOffset()
	}
}
