package partition_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

func TestListOffsetSpecial(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	cases := []struct {
		name      string
		ts        int64
		off, wts  int64
		wantError *kerr.Error
	}{
		{"earliest on empty", partition.TimestampEarliest, 0, -1, nil},
		{"latest on empty", partition.TimestampLatest, 0, -1, nil},
		{"max on empty", partition.TimestampMax, -1, -1, nil},
		{"by time on empty", 5, -1, -1, nil},
		{"unknown negative", -7, 0, 0, kerr.InvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off, ts, err := p.ListOffset(c.ts)
			if c.wantError != nil {
				require.ErrorIs(t, err, c.wantError)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.off, off)
			assert.Equal(t, c.wts, ts)
		})
	}
}

// TestListOffsetByTimestamp checks every lookup against a brute-force
// answer over the decoded records, across codecs, out-of-order timestamps
// and enough data for the sparse time index to have several entries.
func TestListOffsetByTimestamp(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	rng := rand.New(rand.NewPCG(7, 7))
	noise := rand.NewChaCha8([32]byte{7})
	codecs := []batch.Codec{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLz4, batch.CodecZstd}
	var all []batchtest.Record
	base := int64(1_000_000)
	for i := 0; i < 120; i++ {
		n := 1 + rng.IntN(20)
		ts := make([]int64, n)
		vals := make([][]byte, n)
		for j := range ts {
			// Mostly ascending with jitter backwards, like real producers.
			ts[j] = base + int64(i*100+j*3) - int64(rng.IntN(150))
			vals[j] = make([]byte, 1000+rng.IntN(3000)) // random: compression cannot shrink the log
			_, _ = noise.Read(vals[j])
		}
		b := batchtest.Make(t, batchtest.Spec{Values: vals, Timestamps: ts, Codec: codecs[i%len(codecs)]})
		app, err := p.Append(b)
		require.NoError(t, err)
		// Lookups see committed records only: wait for the high watermark.
		require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
		for j := range ts {
			all = append(all, batchtest.Record{Offset: app.BaseOffset + int64(j), Timestamp: ts[j]})
		}
		if i == 60 {
			checkLookups(t, p, all, base, rng) // an index built half way catches up later
		}
	}
	checkLookups(t, p, all, base, rng)

	maxRec := all[0]
	for _, r := range all {
		if r.Timestamp > maxRec.Timestamp {
			maxRec = r
		}
	}
	off, ts, err := p.ListOffset(partition.TimestampMax)
	require.NoError(t, err)
	assert.Equal(t, maxRec.Offset, off, "the first record with the largest timestamp")
	assert.Equal(t, maxRec.Timestamp, ts)
	off, _, err = p.ListOffset(partition.TimestampLatest)
	require.NoError(t, err)
	assert.Equal(t, int64(len(all)), off)
}

func checkLookups(t *testing.T, p *partition.Partition, all []batchtest.Record, base int64, rng *rand.Rand) {
	t.Helper()
	targets := []int64{0, base - 1000, base + 12_000 + 1000, all[0].Timestamp, all[len(all)-1].Timestamp}
	for i := 0; i < 60; i++ {
		targets = append(targets, base-200+rng.Int64N(12_500))
	}
	for _, target := range targets {
		wantOff, wantTS := int64(-1), int64(-1)
		for _, r := range all {
			if r.Timestamp >= target {
				wantOff, wantTS = r.Offset, r.Timestamp
				break
			}
		}
		off, ts, err := p.ListOffset(target)
		require.NoError(t, err)
		require.Equal(t, wantOff, off, "first offset with timestamp >= %d", target)
		require.Equal(t, wantTS, ts, "its timestamp, for target %d", target)
	}
}

func TestListOffsetOnlyCommitted(t *testing.T) {
	dir := t.TempDir()
	m := open(t, flakyName, dir, engine.Options{Sync: engine.SyncAlways})
	p := onePartition(t, m, "t")
	f := flakyOf(dir, p)
	f.set(func(f *flakyEngine) { f.gate = make(chan struct{}) })
	_, err := p.Append(batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("x", 2), Timestamp: 50}))
	require.NoError(t, err)
	off, ts, err := p.ListOffset(10)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), off, "a record above the high watermark is not found")
	assert.Equal(t, int64(-1), ts)
	off, _, err = p.ListOffset(partition.TimestampLatest)
	require.NoError(t, err)
	assert.Equal(t, int64(0), off, "latest is the high watermark, not the log end")
}

// TestListOffsetAfterAMidBatchLogStart: a DeleteRecords offset inside a
// batch, whose start the time index covers.
func TestListOffsetAfterAMidBatchLogStart(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	for i := range 3 {
		app, err := p.Append(batchtest.Make(t, batchtest.Spec{Values: [][]byte{{1}, {2}, {3}}, Timestamp: int64(1000 * (i + 1))}))
		require.NoError(t, err)
		require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
	}
	_, err := p.DeleteBefore(7) // inside the last batch: the start is its first offset
	require.NoError(t, err)
	off, _, err := p.ListOffset(2500)
	require.NoError(t, err)
	require.Equal(t, int64(6), off, "the first record at or after the timestamp")
}
