package segment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// keptBelow returns the batches that Truncate(offset) keeps.
func keptBelow(bs []engine.Batch, offset int64) []engine.Batch {
	var out []engine.Batch
	for _, b := range bs {
		if b.NextOffset() <= offset {
			out = append(out, b)
		}
	}
	return out
}

// TestTruncateIsDurable cuts a multi-segment log at several places: once
// Truncate returns, a power loss keeps the cut (and whatever the disk kept
// of unsynced data), and batches appended after it are not mixed with the
// ones cut.
func TestTruncateIsDurable(t *testing.T) {
	opts := engine.Options{SegmentBytes: 1 << 10}
	// 24 batches of 5 records and 200 bytes: four to a segment, so segments
	// start at offsets 0, 20, 40, ...
	for _, c := range []struct {
		name string
		cut  int64
	}{
		{"inside the active segment's last batch", 117},
		{"at a batch boundary in the active segment", 110},
		{"at the active segment's base", 100},
		{"inside a sealed segment", 47},
		{"at a sealed segment's base", 40},
		{"inside the first batch", 3},
		{"at the start", 0},
	} {
		for _, pct := range []int{0, 100} {
			t.Run(fmt.Sprintf("%s/kept=%d%%", c.name, pct), func(t *testing.T) {
				fs := newMem(t)
				e := open(t, fs, opts)
				bs := appendN(t, e, 24, 5, fixed(200))
				require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
				require.NoError(t, e.Truncate(c.cut))
				kept := keptBelow(bs, c.cut)
				requireBatches(t, kept, enginetest.ReadAll(t, e, 64<<10), "right after Truncate")

				after := open(t, crash(fs, pct), opts)
				requireBatches(t, kept, enginetest.ReadAll(t, after, 64<<10), "after a power loss")

				// New batches at the same offsets, with other sizes.
				fresh := appendN(t, e, 6, 3, fixed(333))
				require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
				want := append(kept, fresh...)
				requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "appends after Truncate")
				after = open(t, crash(fs, pct), opts)
				requireBatches(t, want, enginetest.ReadAll(t, after, 64<<10), "appends after Truncate, after a power loss")
				require.NoError(t, e.Close())
				e = open(t, fs, opts)
				requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "after a clean reopen")
			})
		}
	}
}

// TestRepeatedTruncateNoResurrection: bytes cut by one Truncate stay in the
// segment file, dead; later truncations, rolls and recoveries must never
// bring them back.
func TestRepeatedTruncateNoResurrection(t *testing.T) {
	opts := engine.Options{SegmentBytes: 1 << 10}
	for _, pct := range []int{0, 100} {
		t.Run(fmt.Sprintf("kept=%d%%", pct), func(t *testing.T) {
			fs := newMem(t)
			e := open(t, fs, opts)
			bs := appendN(t, e, 12, 5, fixed(200)) // segments at 0, 20, 40
			require.NoError(t, e.Truncate(25))     // inside segment 20: [25, 40) dead in it
			appendN(t, e, 2, 1, fixed(30))         // segment 25: [25, 27)
			require.NoError(t, e.Truncate(25))     // at segment 25's base
			want := keptBelow(bs, 25)
			requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "after two truncations")

			after := open(t, crash(fs, pct), opts)
			requireBatches(t, want, enginetest.ReadAll(t, after, 64<<10), "after a power loss")
			require.NoError(t, after.Close())
			after = open(t, crash(fs, pct), opts)
			requireBatches(t, want, enginetest.ReadAll(t, after, 64<<10), "after recovering twice")

			require.NoError(t, e.Truncate(20)) // at segment 20's base: its dead tail goes with it
			require.NoError(t, e.Close())
			e = open(t, fs, opts)
			requireBatches(t, keptBelow(bs, 20), enginetest.ReadAll(t, e, 64<<10), "after a third truncation and a reopen")
		})
	}
}

// TestDeleteBefore: whole segments below the start go (log and index
// files), the start survives a power loss, and an offset past the end
// restarts the log there.
func TestDeleteBefore(t *testing.T) {
	opts := engine.Options{SegmentBytes: 1 << 10}
	fs := newMem(t)
	e := open(t, fs, opts)
	bs := appendN(t, e, 24, 5, fixed(200)) // segments at 0, 20, ..., 100
	require.NoError(t, e.Close())
	e = open(t, fs, opts) // indexes of sealed segments on disk
	require.NoError(t, e.DeleteBefore(47))
	assert.Equal(t, []string{logName(40), logName(60), logName(80), logName(100)}, files(t, fs, logSuffix),
		"segments that end at or below the start are removed")
	assert.NotContains(t, files(t, fs, indexSuffix), indexName(20), "with their index")
	_, err := e.Read(44, 0)
	require.ErrorIs(t, err, engine.ErrOffsetOutOfRange)
	got, err := e.Read(47, 0)
	require.NoError(t, err)
	requireBatches(t, bs[9:10], got, "Read at the start returns the batch holding it")

	after := open(t, crash(fs, 0), opts)
	assert.Equal(t, int64(47), after.StartOffset(), "the start survives a power loss")
	requireBatches(t, bs[9:], enginetest.ReadAll(t, after, 64<<10), "after a power loss")

	require.NoError(t, e.DeleteBefore(500))
	assert.Equal(t, []string{logName(500)}, files(t, fs, logSuffix), "past the end: one empty segment at the new start")
	after = open(t, crash(fs, 0), opts)
	assert.Equal(t, int64(500), after.StartOffset())
	assert.Equal(t, int64(500), after.EndOffset())
}

// TestTrimWhileReading runs appends, reads, Truncates and DeleteBefores at
// once (run it with -race): reads return whole, correct batches or
// ErrOffsetOutOfRange for offsets that just went away.
func TestTrimWhileReading(t *testing.T) {
	fs := newMem(t)
	e := open(t, fs, engine.Options{SegmentBytes: 2 << 10, Sync: engine.SyncNever})
	var (
		mu   sync.Mutex // offsets are assigned and trimmed under it
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			for {
				select {
				case <-done:
					return
				default:
				}
				start, end := e.StartOffset(), e.EndOffset()
				if end <= start {
					continue
				}
				bs, err := e.Read(start+rng.Int64N(end-start), rng.IntN(4000))
				if errors.Is(err, engine.ErrOffsetOutOfRange) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				for _, b := range bs {
					if !assert.NoError(t, enginetest.Check(b)) {
						return
					}
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 600 {
		mu.Lock()
		switch {
		case i%50 == 49:
			require.NoError(t, e.DeleteBefore(e.StartOffset()+(e.EndOffset()-e.StartOffset())/2))
		case i%20 == 19:
			require.NoError(t, e.Truncate(max(e.StartOffset(), e.EndOffset()-int64(rng.IntN(30)))))
		default:
			require.NoError(t, e.Append(enginetest.Batch(e.EndOffset(), int32(1+rng.IntN(5)), 20+rng.IntN(500))))
		}
		mu.Unlock()
	}
	close(done)
	wg.Wait()
	want := enginetest.ReadAll(t, e, 64<<10)
	require.NoError(t, e.Close())
	e = open(t, fs, engine.Options{SegmentBytes: 2 << 10})
	requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "after reopen")
}

// TestTruncateCrashBeforeNewSegment: a crash after Truncate removed the
// segments above the cut but before it created the new active segment
// leaves, as the last segment, one whose bytes past the cut are dead. Its
// sealed index must bound it: recovery must not scan into those bytes.
func TestTruncateCrashBeforeNewSegment(t *testing.T) {
	opts := engine.Options{SegmentBytes: 1 << 10}
	for _, c := range []struct {
		name  string
		first int64 // an earlier Truncate, followed by two appends; 0 for none
	}{
		{"cut inside a sealed segment", 0},
		{"cut at the base of a segment after an earlier cut", 25},
	} {
		for _, pct := range []int{0, 100} {
			t.Run(fmt.Sprintf("%s/kept=%d%%", c.name, pct), func(t *testing.T) {
				mem := newMem(t)
				var armed atomic.Bool
				fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
					if armed.Load() && op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, logName(25)) {
						return errorfs.ErrInjected
					}
					return nil
				}))
				e := open(t, fs, opts)
				bs := appendN(t, e, 12, 5, fixed(200)) // segments at 0, 20, 40
				if c.first > 0 {
					require.NoError(t, e.Truncate(c.first))
					appendN(t, e, 2, 1, fixed(30))
				}
				armed.Store(true)
				require.ErrorIs(t, e.Truncate(25), errorfs.ErrInjected, "the power goes before the new segment exists")
				after := open(t, crash(mem, pct), opts)
				requireBatches(t, keptBelow(bs, 25), enginetest.ReadAll(t, after, 64<<10), "after the crash")
				appendN(t, after, 1, 1, fixed(10))
				require.NoError(t, after.Close())
			})
		}
	}
}

// DeleteBefore renames the dropped segments' files aside and hands them to
// Options.Discard once its locks are released (an append made from Discard
// would deadlock otherwise); without Discard it deletes them itself; a
// crash before they are deleted leaves files the next open removes.
func TestDeleteBeforeSetsSegmentsAside(t *testing.T) {
	opts := engine.Options{SegmentBytes: 1 << 10}
	t.Run("through Discard", func(t *testing.T) {
		fs := newMem(t)
		var e *Engine
		var discarded []string
		opts := opts
		opts.Discard = func(p string) {
			discarded = append(discarded, p)
			require.NoError(t, e.Append(engine.Batch{BaseOffset: e.EndOffset(), Records: 1, Data: make([]byte, 10)}),
				"the engine's locks are free")
		}
		e = open(t, fs, opts)
		appendN(t, e, 12, 5, fixed(200)) // segments at 0, 20, 40
		require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
		require.NoError(t, e.DeleteBefore(45))
		assert.Equal(t, []string{path("00000000000000000020.log.deleted")}, discarded, "the first becomes the spare")
		assert.Equal(t, []string{"00000000000000000020.log.deleted"}, files(t, fs, deletedSuffix))
		assert.NotContains(t, files(t, fs, indexSuffix), "00000000000000000000.index")
		assert.Equal(t, []string{"00000000000000000040.log"}, files(t, fs, logSuffix))

		// A crash before Discard's deletions: the next open removes them.
		require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
		after := crash(fs, 0)
		e2 := open(t, after, engine.Options{SegmentBytes: 1 << 10})
		assert.Empty(t, files(t, after, deletedSuffix))
		assert.Equal(t, int64(45), e2.StartOffset())
	})
	t.Run("without Discard", func(t *testing.T) {
		fs := newMem(t)
		e := open(t, fs, opts)
		appendN(t, e, 12, 5, fixed(200))
		require.NoError(t, e.DeleteBefore(45))
		assert.Empty(t, files(t, fs, deletedSuffix))
		assert.Equal(t, []string{"00000000000000000040.log"}, files(t, fs, logSuffix))
	})
}

// A reader inside a dropped segment reads it whole: its file is handed to
// Discard only when the last reader leaves.
func TestDeleteBeforeWaitsForReadersToDiscard(t *testing.T) {
	fs := newMem(t)
	var discarded []string
	e := open(t, fs, engine.Options{SegmentBytes: 1 << 10, Discard: func(p string) { discarded = append(discarded, p) }})
	bs := appendN(t, e, 12, 5, fixed(200)) // segments at 0, 20, 40
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	reader := e.acquire(0)
	require.NotNil(t, reader)
	require.NoError(t, e.DeleteBefore(45))
	assert.Empty(t, discarded, "the segment no one reads becomes the spare at once")
	assert.Equal(t, []string{spareFile}, files(t, fs, spareFile))
	got, _, _, _, err := reader.read(nil, 0, 1<<20, nil, 0)
	require.NoError(t, err, "the reader's segment is still whole")
	requireBatches(t, bs[:4], got, "the dropped segment, read after the drop")
	reader.release()
	assert.Equal(t, []string{path("00000000000000000000.log.deleted")}, discarded, "the log has a spare: the other goes to Discard")
}
