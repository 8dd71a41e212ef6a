package partition_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
)

// Tests of Config.Manual: the caller (the simulator) does what the
// background loops do, on its own goroutine and its own clock.

func openManual(t *testing.T, fs vfs.FS, clk clock.Clock) *partition.Manager {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{Dir: "/data", Engine: segment.Name, Manual: true, Clock: clk,
		EngineOptions: engine.Options{FS: fs, Sync: engine.SyncAlways}})
	require.NoError(t, err)
	return m
}

// TestManualTickSavesHighWatermark: Manager.Tick writes the high watermark
// checkpoints every hwCheckpointEvery, as the tick loop does, so that a
// replica restarted after a power loss starts from a recent high watermark
// in Manual mode too.
func TestManualTickSavesHighWatermark(t *testing.T) {
	mem := vfs.NewCrashableMem()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, mem, clk)
	p := onePartition(t, m, "t")
	_, err := p.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.True(t, p.Sync())
	require.Equal(t, int64(2), p.HighWatermark())

	m.Tick(clk.Now().Add(time.Second))
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	m2 := openManual(t, crashed, clk)
	p2, err := m2.Partition("t", 0)
	require.NoError(t, err)
	require.Zero(t, p2.HighWatermark(), "no checkpoint within the first interval")
	require.NoError(t, m2.Close())

	m.Tick(clk.Now().Add(3 * time.Second))
	crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	m3 := openManual(t, crashed, clk)
	defer m3.Close()
	p3, err := m3.Partition("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), p3.HighWatermark(), "the tick wrote the checkpoint")
	require.NoError(t, m.Close())
}
