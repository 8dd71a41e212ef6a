package partition_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/pebble"
	"github.com/minikafka/minikafka/engines/segment"
)

// durableEngines are the registered engines that keep data across a
// restart; every restart test runs on each.
var durableEngines = []string{pebble.Name, segment.Name}

func openFS(t *testing.T, eng string, fs vfs.FS, dir string) (*partition.Manager, error) {
	t.Helper()
	return partition.OpenManager(partition.Config{Dir: dir, Engine: eng, EngineOptions: engine.Options{FS: fs}})
}

// fill appends n plain batches of 2 records to p and waits until durable.
func fill(t *testing.T, p *partition.Partition, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		app, err := p.Append(batchtest.Plain(t, 2))
		require.NoError(t, err)
		require.NoError(t, p.WaitDurable(context.Background(), app.LastOffset+1))
	}
}

func TestRestartRestoresPartitionsAndRecords(t *testing.T) {
	for _, eng := range append([]string{memory.Name}, durableEngines...) {
		t.Run(eng, func(t *testing.T) {
			dir := t.TempDir()
			m, err := openFS(t, eng, nil, dir)
			require.NoError(t, err)
			createTopic(t, m, "a", 3, map[string]string{cluster.ConfigRetentionMs: "1000"})
			createTopic(t, m, "__consumer_offsets", 1, nil)
			for i := int32(0); i < 3; i++ {
				p, err := m.Partition("a", i)
				require.NoError(t, err)
				fill(t, p, int(i)+1)
			}
			before := m.Keys()
			require.NoError(t, m.Close())
			assert.ErrorIs(t, m.Close(), engine.ErrClosed)

			m2 := open(t, eng, dir, engine.Options{})
			assert.Equal(t, before, m2.Keys(), "topic ids and partitions survive")
			for i := int32(0); i < 3; i++ {
				p, err := m2.Partition("a", i)
				require.NoError(t, err)
				if eng == memory.Name {
					assert.Equal(t, int64(0), p.EndOffset(), "the memory engine keeps no records")
					continue
				}
				assert.Equal(t, int64(i+1)*2, p.HighWatermark(), "partition %d", i)
				assert.Len(t, readAll(t, p, 0), int(i+1)*2)
			}
		})
	}
}

// producerSteps leave producer 5 at epoch 0 with batches seq 0..11 (two
// records each) at offsets 0..11, then check the state after a reopen.
func writeProducer(t *testing.T, p *partition.Partition) {
	t.Helper()
	for seq := int32(0); seq < 12; seq += 2 {
		app, err := p.Append(batchtest.Idempotent(t, 5, 0, seq, 2))
		require.NoError(t, err)
		require.NoError(t, p.WaitDurable(context.Background(), app.LastOffset+1))
	}
}

// checkProducer checks producer 5's state after writeProducer wrote it
// starting at offset base.
func checkProducer(t *testing.T, p *partition.Partition, base int64) {
	t.Helper()
	leadAlone(t, p)
	runProduces(t, p, 5, []produce{
		{seq: 10, n: 2, dup: true, base: base + 10},
		{seq: 4, n: 2, dup: true, base: base + 4},
		{seq: 2, n: 2, dup: true, base: base + 2},           // the oldest of the five remembered
		{seq: 0, n: 2, want: kerr.OutOfOrderSequenceNumber}, // out of the window
		{seq: 14, n: 1, want: kerr.OutOfOrderSequenceNumber},
		{seq: 12, n: 1, base: p.EndOffset()},
	})
}

func snapshots(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(pathOf(dir, "t", 0))
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".snapshot") {
			out = append(out, n)
		}
	}
	slices.Sort(out) // zero-padded offsets: oldest first
	return out
}

func TestRestartKeepsProducerState(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng+"/clean close writes a snapshot", func(t *testing.T) {
			fs, dir := vfs.NewMem(), "/data"
			m, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			writeProducer(t, onePartition(t, m, "t"))
			require.NoError(t, m.Close())
			assert.Equal(t, []string{fmt.Sprintf("producer-%020d.snapshot", 12)}, snapshots(t, fs, dir))

			m2, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			defer m2.Close()
			p, err := m2.Partition("t", 0)
			require.NoError(t, err)
			checkProducer(t, p, 0)
		})
		t.Run(eng+"/crash without a snapshot rebuilds from the log", func(t *testing.T) {
			mem, dir := vfs.NewCrashableMem(), "/data"
			m, err := openFS(t, eng, mem, dir)
			require.NoError(t, err)
			defer m.Close()
			writeProducer(t, onePartition(t, m, "t"))
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			assert.Empty(t, snapshots(t, crashed, dir))

			m2, err := openFS(t, eng, crashed, dir)
			require.NoError(t, err)
			defer m2.Close()
			p, err := m2.Partition("t", 0)
			require.NoError(t, err)
			leadAlone(t, p) // as the broker does once the metadata says so
			assert.Equal(t, int64(12), p.HighWatermark(), "every durable batch survived the crash")
			checkProducer(t, p, 0)
		})
		t.Run(eng+"/snapshot past the log end is discarded", func(t *testing.T) {
			fs, dir := vfs.NewMem(), "/data"
			m, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			writeProducer(t, onePartition(t, m, "t"))
			require.NoError(t, m.Close())
			// A snapshot from a future the crash took back: producer 5 far ahead.
			bogus := producer.NewState()
			for seq := int32(100); seq < 110; seq++ {
				bogus.Record(hdrFor(5, 0, seq), int64(seq), 1000)
			}
			pdir := pathOf(dir, "t", 0)
			require.NoError(t, producer.WriteSnapshot(fs, fs.PathJoin(pdir, fmt.Sprintf("producer-%020d.snapshot", 1000)), bogus, 1000))

			m2, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			defer m2.Close()
			p, err := m2.Partition("t", 0)
			require.NoError(t, err)
			checkProducer(t, p, 0)
			assert.NotContains(t, snapshots(t, fs, dir), fmt.Sprintf("producer-%020d.snapshot", 1000))
		})
		t.Run(eng+"/damaged snapshot falls back to the log", func(t *testing.T) {
			fs, dir := vfs.NewMem(), "/data"
			m, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			writeProducer(t, onePartition(t, m, "t"))
			require.NoError(t, m.Close())
			path := pathOf(dir, "t", 0, fmt.Sprintf("producer-%020d.snapshot", 12))
			f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
			require.NoError(t, err)
			_, err = f.Write([]byte("MKPS garbage"))
			require.NoError(t, err)
			require.NoError(t, f.Close())

			m2, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			defer m2.Close()
			p, err := m2.Partition("t", 0)
			require.NoError(t, err)
			checkProducer(t, p, 0)
		})
	}
}

func TestCrashLosesNothingAcknowledged(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			mem, dir := vfs.NewCrashableMem(), "/data"
			m, err := openFS(t, eng, mem, dir)
			require.NoError(t, err)
			defer m.Close()
			p := onePartition(t, m, "t")
			ctx := ctxT(t)
			var acked int64
			for i := 0; i < 20; i++ {
				app, err := p.Append(batchtest.Plain(t, 3))
				require.NoError(t, err)
				if i%2 == 0 {
					require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
					acked = app.LastOffset + 1
				}
			}
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(1, 2))})
			m2, err := openFS(t, eng, crashed, dir)
			require.NoError(t, err)
			defer m2.Close()
			p2, err := m2.Partition("t", 0)
			require.NoError(t, err)
			leadAlone(t, p2)
			assert.GreaterOrEqual(t, p2.HighWatermark(), acked)
			recs := readAll(t, p2, 0)
			require.GreaterOrEqual(t, int64(len(recs)), acked)
			for i, r := range recs {
				require.Equal(t, int64(i), r.Offset)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			dir := t.TempDir()
			m := open(t, eng, dir, engine.Options{})
			id := createTopic(t, m, "t", 1, nil)
			p, _ := m.Partition("t", 0)
			fill(t, p, 3)

			removeTopic(t, m, id, 1)
			removeTopic(t, m, id, 1) // nothing to remove: no error
			_, err := m.Partition("t", 0)
			assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
			_, err = p.Append(batchtest.Plain(t, 1))
			assert.ErrorIs(t, err, kerr.NotLeaderForPartition, "a handle from before the removal")
			assert.NoDirExists(t, partitionDir(dir, id, 0), "renamed aside at once")
			require.Eventually(t, func() bool { return nothingLeft(t, dir) }, 10*time.Second, 5*time.Millisecond,
				"its data deleted in the background")
			require.NoError(t, m.Close())

			m2 := open(t, eng, dir, engine.Options{})
			assert.Empty(t, m2.Keys())
		})
	}
}

func hdrFor(id int64, epoch int16, seq int32) batch.Header {
	return batch.Header{ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: 1}
}

// TestCloseOfAnIdlePartitionWritesNothing: a partition nothing was
// appended to since it opened closes without writing a file of its own
// (its producer snapshot and checkpoints are what it read), so a broker
// holding thousands of idle partitions shuts down in milliseconds, not
// seconds of fsyncs; one that took a batch writes its snapshot, and the
// next open restores the producer state from it.
func TestCloseOfAnIdlePartitionWritesNothing(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			var counting atomic.Bool
			var writes []string
			fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
				// The store's files are the engine's business.
				if counting.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpFileClose &&
					!strings.Contains(op.Path, "/store/") && !strings.HasSuffix(op.Path, "LOCK") {
					writes = append(writes, fmt.Sprintf("%v %s", op.Kind, op.Path))
				}
				return nil
			}))
			const dir = "/data"
			m, err := openFS(t, eng, fs, dir)
			require.NoError(t, err)
			p := onePartition(t, m, "t")
			runProduces(t, p, 1, []produce{{seq: 0, n: 3, base: 0}})
			require.NoError(t, p.WaitDurable(ctxT(t), 3))
			require.NoError(t, m.Close())

			m, err = openFS(t, eng, fs, dir)
			require.NoError(t, err)
			lead(t, m, "t", 1)
			counting.Store(true)
			require.NoError(t, m.Close())
			counting.Store(false)
			require.Empty(t, writes, "closing an idle partition")

			m, err = openFS(t, eng, fs, dir)
			require.NoError(t, err)
			defer m.Close()
			lead(t, m, "t", 1)
			p, err = m.Partition("t", 0)
			require.NoError(t, err)
			runProduces(t, p, 1, []produce{
				{seq: 0, n: 3, dup: true, base: 0},
				{seq: 3, n: 1, base: 3},
			})
		})
	}
}
