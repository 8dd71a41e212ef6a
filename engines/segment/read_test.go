package segment

import (
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// scanInto reads the log from start to end with ReadInto, handing each call
// the buffer the previous one returned, and checks every batch's bytes
// before the next call may overwrite them.
//
// With grown set, the buffer may be replaced; otherwise every batch must lie
// in the buffer handed in.
func scanInto(t *testing.T, e *Engine, buf []byte, maxBytes int, grown bool) (batches []engine.Batch, last []byte) {
	t.Helper()
	lent := buf
	for off := e.StartOffset(); off < e.EndOffset(); {
		var (
			bs  []engine.Batch
			err error
		)
		bs, buf, err = e.ReadInto(buf, off, maxBytes)
		require.NoError(t, err, "ReadInto(%d)", off)
		require.NotEmpty(t, bs, "ReadInto(%d) below the end", off)
		for _, b := range bs {
			require.NoError(t, enginetest.Check(b))
			require.True(t, grown || inside(lent, b.Data), "batch %d lies in the lent buffer", b.BaseOffset)
			require.Equal(t, len(b.Data), cap(b.Data), "batch %d is capped", b.BaseOffset)
			// Keep what the test compares later: the buffer is reused.
			b.Data = append([]byte(nil), b.Data...)
			batches = append(batches, b)
		}
		off = bs[len(bs)-1].NextOffset()
	}
	return batches, buf
}

// inside reports whether d's bytes lie in buf's backing array.
func inside(buf, d []byte) bool {
	all := buf[:cap(buf)]
	for i := range all {
		if &all[i] == &d[0] {
			return i+len(d) <= len(all)
		}
	}
	return false
}

// TestReadIntoReadsWhatReadReads: ReadInto returns the batches Read returns,
// at every budget, across segments and from the unwritten tail, in the
// memory it was lent once that is large enough.
func TestReadIntoReadsWhatReadReads(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     engine.Options
		sizes    func(int) int
		n        int
		reopen   bool // read a cleanly reopened log: all from the files
		maxBytes []int
	}{
		{"many segments", engine.Options{SegmentBytes: 4 << 10}, fixed(300), 60, true, []int{0, 1, 1000, 64 << 10}},
		{"mixed sizes, one segment", engine.Options{}, func(i int) int { return 20 + (i*977)%9000 }, 80, true, []int{0, 5000, 64 << 10, 1 << 20}},
		{"unwritten tail", engine.Options{Sync: engine.SyncNever}, fixed(700), 40, false, []int{0, 3000, 1 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMem(t)
			e := open(t, fs, c.opts)
			want := appendN(t, e, c.n, 4, c.sizes)
			if c.reopen {
				require.NoError(t, e.Close())
				e = open(t, fs, c.opts)
			}
			for _, maxBytes := range c.maxBytes {
				var got []engine.Batch
				for off := e.StartOffset(); off < e.EndOffset(); {
					bs, err := e.Read(off, maxBytes)
					require.NoError(t, err)
					got = append(got, bs...)
					off = bs[len(bs)-1].NextOffset()
				}
				requireBatches(t, want, got, "Read")
				// From nothing, and from a buffer too small for one batch.
				for _, start := range [][]byte{nil, make([]byte, 10)} {
					got, buf := scanInto(t, e, start, maxBytes, true)
					requireBatches(t, want, got, "ReadInto")
					again, buf2 := scanInto(t, e, buf, maxBytes, false)
					requireBatches(t, want, again, "ReadInto with the returned buffer")
					assert.Same(t, &buf[:1][0], &buf2[:1][0], "a buffer that was large enough is not replaced")
				}
			}
		})
	}
}

// TestReadIntoUsesTheLentBuffer: a buffer large enough for the read is the
// one the batches land in, and the one returned.
func TestReadIntoUsesTheLentBuffer(t *testing.T) {
	fs := newMem(t)
	e := open(t, fs, engine.Options{})
	appendN(t, e, 10, 2, fixed(1000))
	require.NoError(t, e.Close())
	e = open(t, fs, engine.Options{})

	buf := make([]byte, 64<<10)
	bs, got, err := e.ReadInto(buf, 0, 5000)
	require.NoError(t, err)
	require.Len(t, bs, 5)
	assert.Zero(t, len(got), "the returned buffer is empty")
	assert.Same(t, &buf[0], &got[:1][0], "the lent buffer comes back")
	for _, b := range bs {
		assert.True(t, inside(buf, b.Data), "batch %d is in the lent buffer", b.BaseOffset)
	}
}

// TestScanReadsOncePerRead: a sequential scan of sealed segments costs one
// ReadAt per Read, and consecutive Reads start where the one before
// stopped (the kernel sees one stream), with Read and ReadInto alike.
func TestScanReadsOncePerRead(t *testing.T) {
	mem := newMem(t)
	var (
		mu   sync.Mutex
		offs []int64
	)
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, logSuffix) {
			mu.Lock()
			offs = append(offs, op.Offset)
			mu.Unlock()
		}
		return nil
	}))
	// Frames larger than the index interval: every one is indexed, as in a
	// log of producer batches.
	// The budget leaves room short of another batch: the Read must see the
	// next header to stop, as a scan of 1 MiB over 100 kB batches does.
	const data, perRead = 20_000, 10
	const budget = perRead*data + data/2
	e := open(t, fs, engine.Options{})
	want := appendN(t, e, 50, 100, fixed(data))
	require.NoError(t, e.Close())
	e = open(t, fs, engine.Options{})

	for _, c := range []struct {
		name string
		read func(off int64) []engine.Batch
	}{
		{"Read", func(off int64) []engine.Batch {
			bs, err := e.Read(off, budget)
			require.NoError(t, err)
			return bs
		}},
		{"ReadInto", func() func(int64) []engine.Batch {
			var buf []byte
			return func(off int64) []engine.Batch {
				bs, b, err := e.ReadInto(buf, off, budget)
				require.NoError(t, err)
				buf = b
				return bs
			}
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			reads := 0
			var got []engine.Batch
			mu.Lock()
			offs = nil
			mu.Unlock()
			for off := int64(0); off < e.EndOffset(); reads++ {
				bs := c.read(off)
				require.Len(t, bs, min(perRead, len(want)-len(got)))
				for _, b := range bs {
					require.NoError(t, enginetest.Check(b))
				}
				got = append(got, bs...)
				off = bs[len(bs)-1].NextOffset()
			}
			require.Len(t, got, len(want))
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, offs, reads, "ReadAt calls")
			for i, off := range offs {
				assert.Equal(t, int64(fileHeaderLen+i*perRead*(frameHeaderLen+data)), off, "read %d starts where read %d stopped", i, i-1)
			}
		})
	}
}

// TestReadIntoCorrupt: ReadInto checks frames as Read does: a bad frame is
// ErrCorrupt and no data, and the good batches before it come alone.
func TestReadIntoCorrupt(t *testing.T) {
	fs := newMem(t)
	e := open(t, fs, engine.Options{})
	bs := appendN(t, e, 6, 2, fixed(300))
	require.NoError(t, e.Close())
	segs := files(t, fs, logSuffix)
	require.Len(t, segs, 1)
	b := readFile(t, fs, path(segs[0]))
	b[fileHeaderLen+3*(frameHeaderLen+300)+frameHeaderLen+7] ^= 1 // the fourth batch's data
	writeFile(t, fs, path(segs[0]), b)
	e = open(t, vfs.FS(fs), engine.Options{})

	got, buf, err := e.ReadInto(nil, 0, 1<<20)
	require.NoError(t, err, "the batches before the bad one")
	requireBatches(t, bs[:3], got, "before the bad batch")
	got, _, err = e.ReadInto(buf, bs[3].BaseOffset, 1<<20)
	require.ErrorIs(t, err, engine.ErrCorrupt)
	assert.Nil(t, got, "no data with ErrCorrupt")
}
