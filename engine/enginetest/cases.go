package enginetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

func testContiguous(t *testing.T, h *harness) {
	e := h.openDefault()
	assert.Equal(t, int64(0), e.StartOffset(), "contract: a new log starts at 0")
	assert.Equal(t, int64(0), e.EndOffset(), "contract: a new log ends at 0")
	want := appendN(t, e, 5, 3, 100)
	assert.Equal(t, int64(15), e.EndOffset(), "contract: EndOffset moves past every appended batch")
	sameBatches(t, want, ReadAll(t, e, 1<<20), "contract: batches read back as appended")
}

func testWrongBase(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 2, 4, 64)
	for _, base := range []int64{0, 4, 7, 9, 100, -1} {
		err := e.Append(Batch(base, 1, 64))
		assert.ErrorIs(t, err, engine.ErrNotContiguous, "contract: Append at base %d when the end is 8 is refused", base)
	}
	assert.Equal(t, int64(8), e.EndOffset(), "contract: a refused append leaves the end offset alone")
	require.NoError(t, e.Append(Batch(8, 1, 64)), "contract: Append at the end still works after refusals")
}

func testReadWithinBatch(t *testing.T, h *harness) {
	e := h.openDefault()
	bs := appendN(t, e, 3, 10, 200) // offsets 0-9, 10-19, 20-29
	for _, off := range []int64{10, 15, 19} {
		got, err := e.Read(off, 1)
		require.NoError(t, err)
		if assert.NotEmpty(t, got, "contract: Read(%d) returns a batch", off) {
			assert.Equal(t, bs[1].BaseOffset, got[0].BaseOffset, "contract: Read(%d) starts with the batch holding it", off)
			assert.Equal(t, bs[1].Data, got[0].Data, "contract: Read(%d) returns the batch's bytes", off)
		}
	}
}

func testReadPastEnd(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 2, 5, 50)
	got, err := e.Read(10, 1<<20)
	assert.NoError(t, err, "contract: Read at EndOffset is not an error")
	assert.Empty(t, got, "contract: Read at EndOffset returns no batches")
	for _, off := range []int64{11, 1 << 40, -1, -100} {
		_, err := e.Read(off, 1<<20)
		assert.ErrorIs(t, err, engine.ErrOffsetOutOfRange, "contract: Read(%d) outside [0, 10] is out of range", off)
	}
}

func testMaxBytes(t *testing.T, h *harness) {
	e := h.openDefault()
	bs := appendN(t, e, 10, 2, 1000)
	for _, c := range []struct {
		maxBytes, want int
	}{{0, 1}, {1, 1}, {999, 1}, {1000, 1}, {1999, 1}, {2000, 2}, {5500, 5}, {1 << 20, 10}} {
		got, err := e.Read(0, c.maxBytes)
		require.NoError(t, err)
		assert.Len(t, got, c.want, "contract: Read(0, %d) of 1000-byte batches returns whole batches that fit, at least one", c.maxBytes)
		sameBatches(t, bs[:min(len(got), len(bs))], got, "contract: Read returns batches in order")
	}
}

func testOwnership(t *testing.T, h *harness) {
	e := h.openDefault()
	b := Batch(0, 1, 100)
	in := append([]byte(nil), b.Data...)
	require.NoError(t, e.Append(engine.Batch{BaseOffset: 0, Records: 1, Data: in}))
	for i := range in {
		in[i] = 0xAA // the caller reuses its buffer after Append
	}
	got, err := e.Read(0, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NoError(t, Check(got[0]), "contract: the engine keeps its own copy of appended bytes")
	for i := range got[0].Data {
		got[0].Data[i] = 0x55 // the caller scribbles on what Read returned
	}
	again, err := e.Read(0, 1<<20)
	require.NoError(t, err)
	require.Len(t, again, 1)
	assert.NoError(t, Check(again[0]), "contract: bytes returned by Read belong to the caller")
}

func testReopen(t *testing.T, h *harness) {
	h.needDurable()
	e := h.openDefault()
	want := appendN(t, e, 50, 7, 300)
	syncAll(t, e)
	require.NoError(t, e.Close())
	e = h.openDefault()
	assert.Equal(t, int64(0), e.StartOffset(), "contract: reopen keeps the start offset")
	assert.Equal(t, int64(350), e.EndOffset(), "contract: reopen keeps the end offset")
	sameBatches(t, want, ReadAll(t, e, 4096), "contract: reopen keeps every synced batch")
	require.NoError(t, e.Append(Batch(350, 1, 10)), "contract: appends resume at the end after reopen")
}

// testManySegments uses a small segment size so that engines with segments
// roll many times, then reads across the rolls and reopens.
func testManySegments(t *testing.T, h *harness) {
	opts := engine.Options{SegmentBytes: 16 << 10}
	e := h.openWith(opts)
	var want []engine.Batch
	r := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		b := Batch(e.EndOffset(), int32(1+r.IntN(20)), 16+r.IntN(600))
		require.NoError(t, e.Append(b))
		want = append(want, b)
	}
	sameBatches(t, want, ReadAll(t, e, 3000), "contract: reads cross segment rolls")
	for range 50 {
		i := r.IntN(len(want))
		off := want[i].BaseOffset + int64(r.IntN(int(want[i].Records)))
		got, err := e.Read(off, 0)
		require.NoError(t, err)
		if assert.Len(t, got, 1) {
			assert.Equal(t, want[i].BaseOffset, got[0].BaseOffset, "contract: Read(%d) finds its batch in any segment", off)
		}
	}
	if !h.d.Caps.Durable {
		return
	}
	syncAll(t, e)
	require.NoError(t, e.Close())
	e = h.openWith(opts)
	sameBatches(t, want, ReadAll(t, e, 1<<20), "contract: reopen keeps every segment")
}

func testTruncate(t *testing.T, h *harness) {
	e := h.openDefault()
	bs := appendN(t, e, 10, 5, 100) // 0..49
	require.NoError(t, e.Truncate(30), "contract: Truncate at a batch boundary")
	assert.Equal(t, int64(30), e.EndOffset(), "contract: Truncate at a boundary ends the log there")
	require.NoError(t, e.Truncate(22), "contract: Truncate inside a batch")
	assert.Equal(t, int64(20), e.EndOffset(), "contract: Truncate inside a batch drops that whole batch")
	require.NoError(t, e.Truncate(20), "contract: Truncate at the end does nothing")
	assert.Equal(t, int64(20), e.EndOffset())
	_, err := e.Read(25, 1<<20)
	assert.ErrorIs(t, err, engine.ErrOffsetOutOfRange, "contract: truncated offsets are gone")
	// A follower appends the leader's different batches at the same offsets.
	nb := Batch(20, 3, 77)
	require.NoError(t, e.Append(nb), "contract: append resumes at the truncation point")
	want := append(append([]engine.Batch(nil), bs[:4]...), nb)
	sameBatches(t, want, ReadAll(t, e, 1<<20), "contract: the log is the kept prefix plus the new batch")
	if !h.d.Caps.Durable {
		return
	}
	syncAll(t, e)
	require.NoError(t, e.Close())
	e = h.openDefault()
	sameBatches(t, want, ReadAll(t, e, 1<<20), "contract: truncation survives reopen")
}

func testTruncateOutOfRange(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 4, 5, 100)
	assert.ErrorIs(t, e.Truncate(21), engine.ErrOffsetOutOfRange, "contract: Truncate past the end is refused")
	assert.ErrorIs(t, e.Truncate(-1), engine.ErrOffsetOutOfRange, "contract: Truncate to a negative offset is refused")
	assert.Equal(t, int64(20), e.EndOffset(), "contract: a refused Truncate changes nothing")
	require.NoError(t, e.DeleteBefore(10))
	assert.ErrorIs(t, e.Truncate(5), engine.ErrOffsetOutOfRange, "contract: Truncate below the start is refused")
	require.NoError(t, e.Truncate(10), "contract: Truncate to the start empties the log")
	assert.Equal(t, int64(10), e.EndOffset())
	assert.Equal(t, int64(10), e.StartOffset())
	require.NoError(t, e.Append(Batch(10, 2, 40)), "contract: appends resume at an emptied log's start")
}

func testDeleteBefore(t *testing.T, h *harness) {
	opts := engine.Options{SegmentBytes: 4 << 10}
	e := h.openWith(opts)
	bs := appendN(t, e, 100, 4, 200) // 0..399, several segments where engines have them
	require.NoError(t, e.DeleteBefore(202), "contract: DeleteBefore inside the log")
	assert.Equal(t, int64(202), e.StartOffset(), "contract: StartOffset is exactly the new start")
	assert.Equal(t, int64(400), e.EndOffset(), "contract: DeleteBefore leaves the end alone")
	for _, off := range []int64{0, 199, 201} {
		_, err := e.Read(off, 1<<20)
		assert.ErrorIs(t, err, engine.ErrOffsetOutOfRange, "contract: Read(%d) below the start is out of range", off)
	}
	got, err := e.Read(202, 0)
	require.NoError(t, err)
	if assert.Len(t, got, 1) {
		assert.Equal(t, int64(200), got[0].BaseOffset, "contract: Read at the start returns the batch holding it")
	}
	require.NoError(t, e.DeleteBefore(100), "contract: DeleteBefore below the start does nothing")
	assert.Equal(t, int64(202), e.StartOffset())
	if !h.d.Caps.Durable {
		return
	}
	syncAll(t, e)
	require.NoError(t, e.Close())
	e = h.openWith(opts)
	assert.Equal(t, int64(202), e.StartOffset(), "contract: the start offset survives reopen")
	sameBatches(t, bs[50:], ReadAll(t, e, 1<<20), "contract: batches after the start survive reopen")
}

func testDeleteBeforePastEnd(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 3, 5, 50)
	require.NoError(t, e.DeleteBefore(1000), "contract: DeleteBefore past the end restarts the log there")
	assert.Equal(t, int64(1000), e.StartOffset())
	assert.Equal(t, int64(1000), e.EndOffset())
	assert.ErrorIs(t, e.Append(Batch(15, 1, 50)), engine.ErrNotContiguous, "contract: the old end is gone")
	require.NoError(t, e.Append(Batch(1000, 2, 50)))
	got, err := e.Read(1000, 1<<20)
	require.NoError(t, err)
	assert.Len(t, got, 1)
	if !h.d.Caps.Durable {
		return
	}
	syncAll(t, e)
	require.NoError(t, e.Close())
	e = h.openDefault()
	assert.Equal(t, int64(1000), e.StartOffset(), "contract: a restarted log keeps its start after reopen")
	assert.Equal(t, int64(1002), e.EndOffset())
}

// testConcurrent runs appenders that assign offsets under one lock (as the
// broker's partition does) and sync outside it, beside readers that read at
// random offsets below the end, then checks the log has every batch exactly
// once, in order.
func testConcurrent(t *testing.T, h *harness) {
	e := h.openWith(engine.Options{SegmentBytes: 64 << 10})
	const writers, perWriter, readers = 8, 150, 4
	var (
		assign   sync.Mutex
		wg       sync.WaitGroup
		appended atomic.Int64
		done     = make(chan struct{})
	)
	errc := make(chan error, writers+readers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				assign.Lock()
				b := Batch(e.EndOffset(), int32(1+(w+i)%5), 20+(w*31+i*17)%400)
				err := e.Append(b)
				assign.Unlock()
				if err != nil {
					errc <- err
					return
				}
				if err := e.Sync(context.Background(), b.NextOffset()); err != nil {
					errc <- err
					return
				}
				appended.Add(1)
			}
		}()
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-done:
					return
				default:
				}
				end := e.EndOffset()
				if end == 0 {
					continue
				}
				bs, err := e.Read(rnd.Int64N(end), 2000)
				if err != nil {
					errc <- err
					return
				}
				for _, b := range bs {
					if err := Check(b); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("contract: concurrent appends, syncs and reads succeed: %v", err)
	}
	got := ReadAll(t, e, 1<<20)
	assert.Len(t, got, writers*perWriter, "contract: no batch lost or duplicated under concurrency")
	assert.Equal(t, int64(writers*perWriter), appended.Load())
}

func testLargeBatch(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 1, 1, 100)
	big := Batch(1, 1000, 1<<20)
	require.NoError(t, e.Append(big), "contract: a 1 MiB batch is accepted under the default maximum")
	appendN(t, e, 1, 1, 100)
	got, err := e.Read(500, 10)
	require.NoError(t, err)
	if assert.Len(t, got, 1, "contract: a batch larger than maxBytes is still returned, alone") {
		assert.NoError(t, Check(got[0]))
		assert.Len(t, got[0].Data, 1<<20)
	}
	if h.d.Caps.Durable {
		syncAll(t, e)
		require.NoError(t, e.Close())
		e = h.openDefault()
		assert.Len(t, ReadAll(t, e, 1<<20), 3, "contract: a 1 MiB batch survives reopen")
	}
}

func testBadBatches(t *testing.T, h *harness) {
	e := h.openWith(engine.Options{MaxBatchBytes: 1000})
	assert.ErrorIs(t, e.Append(engine.Batch{BaseOffset: 0, Records: 1}), engine.ErrEmptyBatch, "contract: a batch with no bytes is refused")
	assert.ErrorIs(t, e.Append(engine.Batch{BaseOffset: 0, Records: 0, Data: []byte("x")}), engine.ErrEmptyBatch, "contract: a batch of no records is refused")
	assert.ErrorIs(t, e.Append(engine.Batch{BaseOffset: 0, Records: -3, Data: []byte("x")}), engine.ErrEmptyBatch, "contract: a negative record count is refused")
	assert.ErrorIs(t, e.Append(Batch(0, 1, 1001)), engine.ErrBatchTooLarge, "contract: a batch over MaxBatchBytes is refused")
	assert.Equal(t, int64(0), e.EndOffset(), "contract: refused batches leave the log empty")
	require.NoError(t, e.Append(Batch(0, 1, 1000)), "contract: a batch of exactly MaxBatchBytes is accepted")
}

func testSyncContext(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 3, 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.Sync(ctx, e.EndOffset())
	if err != nil {
		assert.ErrorIs(t, err, context.Canceled, "contract: Sync with an ended context returns its error, or nil if already durable")
	}
	assert.NoError(t, e.Sync(context.Background(), 1<<40), "contract: Sync past the end waits for the end")
}

func testClosed(t *testing.T, h *harness) {
	e := h.openDefault()
	appendN(t, e, 2, 1, 10)
	require.NoError(t, e.Close(), "contract: Close succeeds once")
	assert.ErrorIs(t, e.Close(), engine.ErrClosed, "contract: a second Close returns ErrClosed")
	assert.ErrorIs(t, e.Append(Batch(2, 1, 10)), engine.ErrClosed, "contract: Append after Close")
	assert.ErrorIs(t, e.Sync(context.Background(), 1), engine.ErrClosed, "contract: Sync after Close")
	_, err := e.Read(0, 100)
	assert.ErrorIs(t, err, engine.ErrClosed, "contract: Read after Close")
	assert.ErrorIs(t, e.Truncate(0), engine.ErrClosed, "contract: Truncate after Close")
	assert.ErrorIs(t, e.DeleteBefore(1), engine.ErrClosed, "contract: DeleteBefore after Close")
	assert.NotPanics(t, func() { e.StartOffset(); e.EndOffset() }, "contract: offsets after Close do not panic")
}

func testWrongEngine(t *testing.T, h *harness) {
	h.needDurable()
	fs := vfs.Default
	require.NoError(t, fs.MkdirAll(h.dir, 0o755))
	require.NoError(t, engine.WriteFileAtomic(fs, fs.PathJoin(h.dir, engine.MarkerFile), []byte("some-other-engine\n")))
	_, err := h.open(h.dir, engine.Options{})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "contract: a directory written by another engine is refused")

	stray := fs.PathJoin(h.dir, "..", "stray")
	require.NoError(t, fs.MkdirAll(stray, 0o755))
	f, err := fs.Create(fs.PathJoin(stray, "notes.txt"), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = h.open(stray, engine.Options{})
	if !errors.Is(err, engine.ErrWrongEngine) {
		t.Errorf("contract: a non-empty directory with no engine marker is refused with ErrWrongEngine, got %v", err)
	}
}
