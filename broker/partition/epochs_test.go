package partition_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

// TestEpochCheckpointBeforeItsBatches: taking the lead at a new epoch writes
// no leader epoch checkpoint (a broker leading thousands of partitions
// again after a restart would spend seconds in fsyncs), yet no batch of
// the epoch reaches the log before the checkpoint holds it: a crash image
// taken at any point after the first append, with any share of the
// unsynced data kept, reopens with the epoch wherever the log has its
// batches.
func TestEpochCheckpointBeforeItsBatches(t *testing.T) {
	const epoch = 5
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			mem, dir := vfs.NewCrashableMem(), "/data"
			clk := clock.NewManual(time.Unix(1_700_000_000, 0))
			m := openOnClock(t, eng, mem, dir, clk)
			defer m.Close()
			p := onePartition(t, m, "t")
			ctx := ctxT(t)
			// A new partition has no checkpoint: its first one is written a
			// moment after the first batches, off the append path (the
			// open would rebuild it from the log until then), so that its
			// syncs do not land beside theirs.
			var app partition.Appended
			var err error
			for range 2 {
				app, err = p.Append(batchtest.Plain(t, 2))
				require.NoError(t, err)
				require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
			}
			require.Nil(t, checkpointBytes(t, mem, dir), "no checkpoint right after the first batches")
			clk.Advance(time.Second)
			app, err = p.Append(batchtest.Plain(t, 2))
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
			var before []byte
			require.Eventually(t, func() bool { before = checkpointBytes(t, mem, dir); return before != nil },
				5*time.Second, time.Millisecond, "the first checkpoint is written by the background loop")

			_, err = p.SetState(partition.ReplicaState{
				Self: 1, BrokerEpoch: 1, Lead: true, Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch,
				Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1, Now: time.Now(),
			})
			require.NoError(t, err)
			require.Equal(t, before, checkpointBytes(t, mem, dir), "the new leadership alone wrote no checkpoint")

			rng := rand.New(rand.NewPCG(7, uint64(len(eng))))
			var images []vfs.FS
			for range 3 {
				app, err = p.Append(batchtest.Plain(t, 2))
				require.NoError(t, err)
				images = append(images, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
			}
			require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
			images = append(images, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
			for i, img := range images {
				t.Run(fmt.Sprintf("image%d", i), func(t *testing.T) {
					e, end := reopened(t, eng, dir, img)
					if end > 6 {
						require.Equal(t, int32(epoch), e, "the log holds batches of epoch %d (to %d): so does the cache", epoch, end)
					}
				})
			}
		})
	}
}

// checkpointBytes is the content of the one leader epoch checkpoint under
// dir, nil when there is none.
func checkpointBytes(t *testing.T, fs vfs.FS, dir string) []byte {
	t.Helper()
	var found []byte
	var walk func(string)
	walk = func(d string) {
		names, err := fs.List(d)
		require.NoError(t, err)
		for _, n := range names {
			path := fs.PathJoin(d, n)
			if st, err := fs.Stat(path); err == nil && st.IsDir() {
				walk(path)
			} else if n == "leader-epoch.checkpoint" {
				f, err := fs.Open(path)
				require.NoError(t, err)
				found, err = io.ReadAll(f)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
		}
	}
	walk(dir)
	return found
}

// reopened opens the crash image fs and returns the latest epoch of the
// partition's leader epoch cache and its log end.
func reopened(t *testing.T, eng, dir string, fs vfs.FS) (int32, int64) {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, EngineOptions: engine.Options{FS: fs}})
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Partition("t", 0)
	require.NoError(t, err)
	e, _ := p.EndOffsetForEpoch(1 << 30)
	return e, p.EndOffset()
}

// TestCloseWritesTheFirstEpochCheckpoint: a partition closed before its
// first checkpoint was due writes it at close, so that its next open reads
// the file rather than every batch; an empty one writes none.
func TestCloseWritesTheFirstEpochCheckpoint(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			mem, dir := vfs.NewMem(), "/data"
			clk := clock.NewManual(time.Unix(1_700_000_000, 0))
			m := openOnClock(t, eng, mem, dir, clk)
			p := onePartition(t, m, "t")
			app, err := p.Append(batchtest.Plain(t, 2))
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
			require.Nil(t, checkpointBytes(t, mem, dir), "not due yet")
			require.NoError(t, m.Close())
			require.NotNil(t, checkpointBytes(t, mem, dir), "written at close")

			empty := "/empty"
			m = openOnClock(t, eng, mem, empty, clk)
			onePartition(t, m, "t")
			require.NoError(t, m.Close())
			require.Nil(t, checkpointBytes(t, mem, empty), "an empty partition writes none")
		})
	}
}

// openOnClock opens a manager on fs under sync=always whose background
// loops run on clk.
func openOnClock(t *testing.T, eng string, fs vfs.FS, dir string, clk clock.Clock) *partition.Manager {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, Clock: clk,
		EngineOptions: engine.Options{FS: fs, Sync: engine.SyncAlways}})
	require.NoError(t, err)
	return m
}
