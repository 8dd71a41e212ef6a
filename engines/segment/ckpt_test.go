package segment

import (
	"context"
	"hash/crc32"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// readWatcher wraps fs and records the lowest offset read from a segment
// file since the last reset.
type readWatcher struct {
	fs     vfs.FS
	lowest atomic.Int64
}

func watchReads(mem vfs.FS) *readWatcher {
	w := &readWatcher{}
	w.reset()
	w.fs = errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, logSuffix) {
			for {
				cur := w.lowest.Load()
				if op.Offset >= cur || w.lowest.CompareAndSwap(cur, op.Offset) {
					break
				}
			}
		}
		return nil
	}))
	return w
}

func (w *readWatcher) reset() { w.lowest.Store(math.MaxInt64) }

// checkpointedCrash writes 12 MiB into one active segment of a 64 MiB
// segment size (checkpointed every 2 MiB), syncing every 64 KiB, and
// returns what a kill -9 right after leaves (every write the process made:
// checkpoints are not synced, the kernel writes them back), with the
// batches.
func checkpointedCrash(t *testing.T) (*vfs.MemFS, []engine.Batch, engine.Options) {
	t.Helper()
	mem := newMem(t)
	opts := engine.Options{SegmentBytes: 64 << 20}
	e := open(t, mem, opts)
	var bs []engine.Batch
	for range 192 {
		bs = append(bs, appendN(t, e, 16, 4, fixed(4<<10))...)
		require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	}
	require.Len(t, files(t, mem, logSuffix), 1, "one segment")
	return crash(mem, 100), bs, opts
}

// TestRecoveryResumesAtCheckpoint: after a crash, Open checks only the
// frames from the last checkpoint on, and the log is whole.
func TestRecoveryResumesAtCheckpoint(t *testing.T) {
	mem, bs, opts := checkpointedCrash(t)
	require.NotEmpty(t, files(t, mem, ckptSuffix), "the active segment has a checkpoint")
	w := watchReads(crash(mem, 100))
	e := open(t, w.fs, opts)
	assert.GreaterOrEqual(t, w.lowest.Load(), int64(8<<20), "recovery read below the last checkpoint")
	require.Equal(t, bs[len(bs)-1].NextOffset(), e.EndOffset())
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after recovery from a checkpoint")

	// Without the checkpoint the whole segment is scanned, to the same end.
	fs := crash(mem, 0)
	require.NoError(t, fs.Remove(path(ckptName(0))))
	w = watchReads(fs)
	e = open(t, w.fs, opts)
	assert.Zero(t, w.lowest.Load(), "without a checkpoint the segment is scanned from its start")
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after a full scan")
}

// TestCheckpointNotTrusted: a checkpoint whose records are damaged is used
// up to its last good record; one that does not match the frames (its
// extent off a frame boundary, or past the file) is not used at all.
func TestCheckpointNotTrusted(t *testing.T) {
	mem, bs, opts := checkpointedCrash(t)
	ck := readFile(t, mem, path(ckptName(0)))
	good, err := decodeCheckpoint(ck, 0)
	require.NoError(t, err)

	lie := func(endPosDelta int64) []byte {
		b := encodeCheckpointHeader(0)
		b, _ = appendCheckpointRecord(b, crc(b), good.entries, good.end, good.endPos+endPosDelta)
		return b
	}
	damaged := append([]byte(nil), ck...)
	damaged[len(damaged)-3] ^= 0xff // the last record's CRC

	for _, tc := range []struct {
		name     string
		ckpt     []byte
		resumed  bool // whether recovery may skip the start of the segment
		minFloor int64
	}{
		{"last record damaged", damaged, true, 6 << 20},
		{"extent off a frame boundary", lie(1), false, 0},
		{"extent past the file", lie(64 << 20), false, 0},
		{"header only", encodeCheckpointHeader(0), false, 0},
		{"another segment's", func() []byte { b := encodeCheckpointHeader(7); return b }(), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := crash(mem, 0)
			writeFile(t, fs, path(ckptName(0)), tc.ckpt)
			w := watchReads(fs)
			e := open(t, w.fs, opts)
			if tc.resumed {
				assert.GreaterOrEqual(t, w.lowest.Load(), tc.minFloor, "resumed from an earlier record")
			} else {
				assert.Zero(t, w.lowest.Load(), "the checkpoint was not trusted: a full scan")
			}
			requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after recovery")
		})
	}
}

// TestCheckpointAfterTruncate: a Truncate inside the active segment leaves
// no checkpoint that could vouch for bytes past the cut, and a segment
// started again at the same base does not inherit the old one's.
func TestCheckpointAfterTruncate(t *testing.T) {
	mem, bs, opts := checkpointedCrash(t)
	e := open(t, mem, opts)
	cut := bs[len(bs)/2].BaseOffset
	require.NoError(t, e.Truncate(cut))
	nb := appendN(t, e, 300, 4, fixed(4<<10))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	after := crash(mem, 30)
	e2 := open(t, after, opts)
	requireBatches(t, append(bs[:len(bs)/2:len(bs)/2], nb...), enginetest.ReadAll(t, e2, 64<<10), "after truncating, appending and a crash")

	// Truncate to the first batch: the segment at base 0 is made anew.
	require.NoError(t, e.Truncate(0))
	again := appendN(t, e, 10, 4, fixed(100))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	e3 := open(t, crash(mem, 100), opts)
	requireBatches(t, again, enginetest.ReadAll(t, e3, 64<<10), "after truncating to the start and a crash")
}

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
