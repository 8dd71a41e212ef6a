package partition_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
)

// crashPoint is a copy of the filesystem taken while the producer ran, and
// how many records were acknowledged (acks=all) before it was taken.
type crashPoint struct {
	fs    vfs.FS
	acked int64
}

// TestCrashAnywhere runs an idempotent producer (acks=all, SyncAlways) and
// takes crash images of the filesystem while it writes, keeping a random
// share of unsynced data in each. Every image must reopen with: every
// acknowledged record, offsets without gaps, and a producer state that
// agrees with the log (a retry of the producer's last stored batch is a
// duplicate with its offset; the next sequence is accepted).
func TestCrashAnywhere(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			const seed = 42
			rng := rand.New(rand.NewPCG(seed, uint64(len(eng))))
			mem, dir := vfs.NewCrashableMem(), "/data"
			cfg := partition.Config{Dir: dir, Engine: eng, SnapshotBytes: 3000,
				EngineOptions: engine.Options{FS: mem, Sync: engine.SyncAlways}}
			m, err := partition.OpenManager(cfg)
			require.NoError(t, err)
			defer m.Close()
			p := onePartition(t, m, "t")
			ctx := ctxT(t)

			// Pipelined like a client: a few appends, then wait for the last;
			// crash images are taken between appends too, when the log holds
			// unsynced batches.
			var points []crashPoint
			var acked int64
			crash := func() {
				points = append(points, crashPoint{
					fs: mem.CrashClone(vfs.CrashCloneCfg{
						UnsyncedDataPercent: rng.IntN(101),
						RNG:                 rand.New(rand.NewPCG(seed, uint64(len(points)))),
					}),
					acked: acked,
				})
			}
			for seq := int32(0); seq < 300; {
				var end int64
				for k := 1 + rng.IntN(4); k > 0 && seq < 300; k-- {
					app, err := p.Append(batchtest.Idempotent(t, 1, 0, seq, 3))
					require.NoError(t, err)
					end, seq = app.LastOffset+1, seq+3
					if rng.IntN(8) == 0 {
						crash()
					}
				}
				require.NoError(t, p.WaitHighWatermark(ctx, end))
				acked = end
				if rng.IntN(8) == 0 {
					crash()
				}
			}
			crash()
			require.Greater(t, len(points), 5)
			for i, pt := range points {
				t.Run(fmt.Sprintf("image%02d-acked%d", i, pt.acked), func(t *testing.T) { checkImage(t, eng, dir, pt) })
			}
		})
	}
}

func checkImage(t *testing.T, eng, dir string, pt crashPoint) {
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, EngineOptions: engine.Options{FS: pt.fs}})
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Partition("t", 0)
	require.NoError(t, err, "the topic was durable before the producer started")
	lead(t, m, "t", 1)
	recs := readAll(t, p, 0)
	require.GreaterOrEqual(t, int64(len(recs)), pt.acked, "acknowledged records survive")
	for i, r := range recs {
		require.Equal(t, int64(i), r.Offset, "no gap")
		require.Equal(t, fmt.Sprintf("p1-e0-s%d-%d", i/3*3, i%3), string(r.Value))
	}
	if len(recs) == 0 {
		return
	}
	last := int32(len(recs)) - 3
	runProduces(t, p, 1, []produce{
		{seq: last, n: 3, dup: true, base: int64(last)},
		{seq: last + 4, n: 1, want: kerr.OutOfOrderSequenceNumber},
		{seq: last + 3, n: 1, base: int64(len(recs))},
	})
}
