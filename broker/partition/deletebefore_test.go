package partition_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// TestDeleteBeforeMovesInternalLogStart: DeleteBefore moves the start of
// __consumer_offsets (which retention never trims), durably, on every
// engine; reads and ListOffsets follow it.
func TestDeleteBeforeMovesInternalLogStart(t *testing.T) {
	for _, eng := range append([]string{memory.Name}, durableEngines...) {
		t.Run(eng, func(t *testing.T) {
			clk := clock.NewManual(t0)
			dir := t.TempDir()
			m := retentionManager(t, eng, dir, clk)
			p := onePartition(t, m, "__consumer_offsets")
			ms := t0.UnixMilli()
			appendAt(t, p, ms, 2)            // 0-1
			keep := appendAt(t, p, ms, 3)    // 2-4
			last := appendAt(t, p, ms+10, 1) // 5

			start, err := p.DeleteBefore(keep)
			require.NoError(t, err)
			assert.Equal(t, keep, start)
			assert.Equal(t, keep, p.StartOffset())
			_, err = p.Read(0, 1<<20)
			assert.ErrorIs(t, err, kerr.OffsetOutOfRange, "below the new start")
			assert.Len(t, readAll(t, p, keep), 4)
			off, _, err := p.ListOffset(partition.TimestampEarliest)
			require.NoError(t, err)
			assert.Equal(t, keep, off)
			off, _, err = p.ListOffset(ms)
			require.NoError(t, err)
			assert.Equal(t, keep, off, "the time index starts at the new start")
			off, _, err = p.ListOffset(partition.TimestampMax)
			require.NoError(t, err)
			assert.Equal(t, last, off)

			start, err = p.DeleteBefore(1)
			require.NoError(t, err, "below the start: nothing to do")
			assert.Equal(t, keep, start)
			_, err = p.DeleteBefore(p.EndOffset() + 1)
			assert.ErrorIs(t, err, kerr.OffsetOutOfRange, "past the high watermark")
			assert.Equal(t, keep, p.StartOffset())

			if eng == memory.Name {
				return
			}
			require.NoError(t, m.Close())
			_, err = p.DeleteBefore(last)
			assert.ErrorIs(t, err, kerr.NotLeaderForPartition, "closed")
			m2 := retentionManager(t, eng, dir, clk)
			p2, err := m2.Partition("__consumer_offsets", 0)
			require.NoError(t, err)
			assert.Equal(t, keep, p2.StartOffset(), "the new start is durable")
			assert.Len(t, readAll(t, p2, keep), 4)
		})
	}
}

// TestDeleteBeforeSparesUncommitted: records above the high watermark (not
// yet durable under sync=always) are never deleted.
func TestDeleteBeforeSparesUncommitted(t *testing.T) {
	dir := t.TempDir()
	m, err := partition.OpenManager(partition.Config{
		Dir: dir, Engine: flakyName, Clock: clock.NewManual(t0), RetentionCheckInterval: -1,
		EngineOptions: engine.Options{Sync: engine.SyncAlways},
	})
	require.NoError(t, err)
	defer m.Close()
	p := onePartition(t, m, "__consumer_offsets")
	appendAt(t, p, 0, 2)
	f := flakyOf(dir, p)
	f.set(func(f *flakyEngine) { f.gate = make(chan struct{}) })
	_, err = p.Append(batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("x", 2), Timestamp: 0}))
	require.NoError(t, err)

	_, err = p.DeleteBefore(4)
	assert.ErrorIs(t, err, kerr.OffsetOutOfRange)
	_, err = p.DeleteBefore(2)
	require.NoError(t, err, "up to the high watermark")
	assert.Equal(t, int64(2), p.StartOffset())
	assert.Equal(t, int64(4), p.EndOffset())
}

// TestDeleteBeforeKeepsBatchesWhole: an offset inside a batch moves the
// start to the batch's first offset, which replicas can store.
func TestDeleteBeforeKeepsBatchesWhole(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	for range 2 {
		app, err := p.Append(batchtest.Plain(t, 3))
		require.NoError(t, err)
		require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
	}
	start, err := p.DeleteBefore(4)
	require.NoError(t, err)
	require.Equal(t, int64(3), start)
	require.Equal(t, int64(3), p.StartOffset())
}
