package partition_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

// syncBuffer is a bytes.Buffer safe for a slog handler used by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPeriodicSnapshotsAndExpiry: a partition snapshots its producer state
// every SnapshotBytes, forgets producers silent for a day when it does, keeps
// the newest three snapshots, and after a crash rebuilds from the newest
// snapshot plus the log after it.
func TestPeriodicSnapshotsAndExpiry(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			mem, dir := vfs.NewCrashableMem(), "/data"
			clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
			cfg := partition.Config{
				Dir: dir, Engine: eng, Clock: clk, SnapshotBytes: 2000,
				EngineOptions: engine.Options{FS: mem, Sync: engine.SyncAlways, Clock: clock.Real},
			}
			m, err := partition.OpenManager(cfg)
			require.NoError(t, err)
			defer m.Close()
			p := onePartition(t, m, "t")
			ctx := ctxT(t)

			// Producer 6 writes, then stays silent for two days (by the
			// broker's clock): expired at the next snapshot.
			_, err = p.Append(batchtest.Idempotent(t, 6, 0, 0, 1))
			require.NoError(t, err)
			clk.Advance(48 * time.Hour)
			writeProducer(t, p)
			for i := 0; i < 4; i++ {
				app, err := p.Append(batchtest.Make(t, batchtest.Spec{Values: [][]byte{make([]byte, 2500)}}))
				require.NoError(t, err)
				require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
				// Written after the batch is durable, then the oldest pruned:
				// wait for both, the newest name being this batch's end.
				newest := fmt.Sprintf("producer-%020d.snapshot", app.LastOffset+1)
				require.Eventually(t, func() bool {
					s := snapshots(t, mem, dir)
					return len(s) == min(i+1, 3) && s[len(s)-1] == newest
				}, 20*time.Second, time.Millisecond, newest)
			}
			require.Len(t, snapshots(t, mem, dir), 3, "only the newest three are kept")
			_, known := p.ProducerState().Producer(6)
			assert.False(t, known, "a producer silent for a day is forgotten")

			// One more idempotent batch after the last snapshot: only the log has it.
			app, err := p.Append(batchtest.Idempotent(t, 7, 0, 0, 1))
			require.NoError(t, err)
			require.NoError(t, p.WaitDurable(ctx, app.LastOffset+1))

			logs := &syncBuffer{}
			cfg.EngineOptions.FS = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
			m2, err := partition.OpenManager(cfg)
			require.NoError(t, err)
			defer m2.Close()
			p2, err := m2.Partition("t", 0)
			require.NoError(t, err)
			assert.Contains(t, logs.String(), "batches=1 ", "only the batch after the newest snapshot is replayed")
			checkProducer(t, p2, 1)
			runProduces(t, p2, 7, []produce{{seq: 0, n: 1, dup: true, base: app.BaseOffset}})
			_, err = p2.Append(batchtest.Idempotent(t, 6, 0, 5, 1))
			assert.NoError(t, err, "an expired producer is unknown: any sequence goes")
			_, err = p2.Append(batchtest.Idempotent(t, 7, 0, 5, 1))
			assert.ErrorIs(t, err, kerr.OutOfOrderSequenceNumber)
		})
	}
}
