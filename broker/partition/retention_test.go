package partition_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/segment"
)

var t0 = time.UnixMilli(1_700_000_000_000)

// retentionManager opens a manager on the manual clock clk with background
// retention off, so each test decides when retention runs.
func retentionManager(t *testing.T, eng, dir string, clk clock.Clock) *partition.Manager {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{
		Dir: dir, Engine: eng, Clock: clk, RetentionCheckInterval: -1,
		EngineOptions: engine.Options{Clock: clock.Real},
	})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// appendAt appends a batch of n records with timestamp ts (ms) and returns
// its base offset, once committed.
func appendAt(t *testing.T, p *partition.Partition, ts int64, n int) int64 {
	t.Helper()
	app, err := p.Append(batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("r", n), Timestamp: ts}))
	require.NoError(t, err)
	require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
	return app.BaseOffset
}

func TestRetentionByTime(t *testing.T) {
	for _, eng := range append([]string{memory.Name}, durableEngines...) {
		t.Run(eng, func(t *testing.T) {
			clk := clock.NewManual(t0)
			dir := t.TempDir()
			m := retentionManager(t, eng, dir, clk)
			createTopic(t, m, "t", 1, map[string]string{cluster.ConfigRetentionMs: "60000"})
			p, _ := m.Partition("t", 0)
			ms := t0.UnixMilli()
			appendAt(t, p, ms-300_000, 2)        // 0-1: old
			appendAt(t, p, ms-200_000, 2)        // 2-3: old
			keep := appendAt(t, p, ms-10_000, 2) // 4-5: recent
			appendAt(t, p, ms-500_000, 2)        // 6-7: old, but after a recent one: kept (a prefix goes)
			appendAt(t, p, ms, 2)                // 8-9

			require.NoError(t, m.EnforceRetention())
			assert.Equal(t, keep, p.StartOffset(), "the old prefix is gone")
			_, err := p.Read(0, 1<<20)
			assert.ErrorIs(t, err, kerr.OffsetOutOfRange)
			off, _, err := p.ListOffset(partition.TimestampEarliest)
			require.NoError(t, err)
			assert.Equal(t, keep, off)
			off, _, err = p.ListOffset(ms - 1_000_000)
			require.NoError(t, err)
			assert.Equal(t, keep, off, "lookups start at the new log start")
			off, ts, err := p.ListOffset(partition.TimestampMax)
			require.NoError(t, err)
			assert.Equal(t, int64(9), off)
			assert.Equal(t, ms+1, ts)
			assert.Len(t, readAll(t, p, keep), 6)

			require.NoError(t, m.EnforceRetention())
			assert.Equal(t, keep, p.StartOffset(), "nothing more is due")
			clk.Advance(time.Hour)
			require.NoError(t, m.EnforceRetention())
			assert.Equal(t, int64(10), p.StartOffset(), "an hour later everything committed is due")
			assert.Equal(t, int64(10), p.EndOffset())

			if eng == memory.Name {
				return
			}
			require.NoError(t, m.Close())
			m2 := retentionManager(t, eng, dir, clk)
			p2, err := m2.Partition("t", 0)
			require.NoError(t, err)
			assert.Equal(t, int64(10), p2.StartOffset(), "the new start is durable")
		})
	}
}

func TestRetentionByBytes(t *testing.T) {
	clk := clock.NewManual(t0)
	m := retentionManager(t, memory.Name, t.TempDir(), clk)
	one := len(batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("r", 3), Timestamp: t0.UnixMilli()}))
	createTopic(t, m, "t", 1, map[string]string{
		cluster.ConfigRetentionBytes: strconv.Itoa(2*one + one/2), cluster.ConfigRetentionMs: "-1",
	})
	p, _ := m.Partition("t", 0)
	for i := 0; i < 5; i++ {
		appendAt(t, p, t0.UnixMilli(), 3)
	}
	require.NoError(t, m.EnforceRetention())
	assert.Equal(t, int64(9), p.StartOffset(), "two batches fit in the limit")
	assert.Len(t, readAll(t, p, 9), 6)
}

func TestRetentionSparesInternalAndUncommitted(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	m, err := partition.OpenManager(partition.Config{
		Dir: dir, Engine: flakyName, Clock: clk, RetentionCheckInterval: -1,
		EngineOptions: engine.Options{Sync: engine.SyncAlways},
	})
	require.NoError(t, err)
	defer m.Close()
	createTopic(t, m, "__consumer_offsets", 1, map[string]string{cluster.ConfigRetentionMs: "1"})
	createTopic(t, m, "t", 1, map[string]string{cluster.ConfigRetentionMs: "1"})
	internal, _ := m.Partition("__consumer_offsets", 0)
	appendAt(t, internal, 0, 2)
	p, _ := m.Partition("t", 0)
	appendAt(t, p, 0, 2)
	f := flakyOf(dir, p)
	f.set(func(f *flakyEngine) { f.gate = make(chan struct{}) })
	_, err = p.Append(batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("x", 2), Timestamp: 0}))
	require.NoError(t, err)

	require.NoError(t, m.EnforceRetention())
	assert.Equal(t, int64(0), internal.StartOffset(), "internal topics are never trimmed")
	assert.Equal(t, int64(2), p.StartOffset(), "only the committed batch went, not the one above the HW")
	assert.Equal(t, int64(4), p.EndOffset())
}

func TestRetentionRunsOnTheClock(t *testing.T) {
	clk := clock.NewManual(t0)
	m, err := partition.OpenManager(partition.Config{
		Dir: t.TempDir(), Engine: memory.Name, Clock: clk, RetentionCheckInterval: time.Minute,
	})
	require.NoError(t, err)
	defer m.Close()
	createTopic(t, m, "t", 1, map[string]string{cluster.ConfigRetentionMs: "1000"})
	p, _ := m.Partition("t", 0)
	appendAt(t, p, t0.UnixMilli()-5000, 1)
	appendAt(t, p, t0.UnixMilli()+120_000, 1)
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool { return p.StartOffset() == 1 }, 20*time.Second, time.Millisecond, "retention on the clock")
}

// Segments that retention drops leave the log at once; their files go to
// the broker's paced deleter (here so slow that they wait), and an open
// removes what a Close left.
func TestRetentionHandsDroppedSegmentsToTheDeleter(t *testing.T) {
	dir := t.TempDir()
	cfg := partition.Config{
		Dir: dir, Engine: segment.Name, RetentionCheckInterval: -1, DeleteRate: 1, // a byte a second
		EngineOptions: engine.Options{SegmentBytes: 1 << 10},
	}
	m, err := partition.OpenManager(cfg)
	require.NoError(t, err)
	createTopic(t, m, "t", 1, map[string]string{cluster.ConfigRetentionBytes: "2048", cluster.ConfigRetentionMs: "-1"})
	p, _ := m.Partition("t", 0)
	for range 40 {
		appendAt(t, p, t0.UnixMilli(), 10)
	}
	logDir := logDirOf(dir, p)
	files := func(suffix string) int {
		names, err := filepath.Glob(filepath.Join(logDir, "*"+suffix))
		require.NoError(t, err)
		return len(names)
	}
	before := files(".log")
	require.NoError(t, m.EnforceRetention())
	start := p.StartOffset()
	assert.Positive(t, start)
	assert.Less(t, files(".log"), before, "the dropped segments are out of the log")
	assert.Positive(t, files(".deleted"), "set aside, waiting for the deleter")
	assert.Len(t, readAll(t, p, start), int(p.EndOffset()-start))
	require.NoError(t, m.Close())

	cfg.DeleteRate = 0
	m2, err := partition.OpenManager(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { m2.Close() })
	assert.Zero(t, files(".deleted"), "the open removed them")
	p2, err := m2.Partition("t", 0)
	require.NoError(t, err)
	assert.Equal(t, start, p2.StartOffset())
}
