package segment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

func newRand() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

// crashedLog returns a filesystem holding a log of the given batch sizes as
// a power loss right after a Sync leaves it: no clean-shutdown marker, no
// index for the active segment.
func crashedLog(t *testing.T, sizes []int) (*vfs.MemFS, []engine.Batch) {
	t.Helper()
	fs := newMem(t)
	e := open(t, fs, engine.Options{})
	bs := appendN(t, e, len(sizes), 3, func(i int) int { return sizes[i] })
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	return crash(fs, 0), bs
}

// TestTornTailEveryByte cuts the last frame of the active segment at every
// byte, as a crash in the middle of its write would: recovery must keep the
// earlier frames, drop the torn one, and take appends after them.
func TestTornTailEveryByte(t *testing.T) {
	sizes := []int{100, 333, 150}
	base, bs := crashedLog(t, sizes)
	seg := path(logName(0))
	full := readFile(t, base, seg)
	lastPos := len(full) - frameHeaderLen - sizes[2]
	for cut := lastPos; cut < len(full); cut++ {
		t.Run(fmt.Sprintf("cut%d", cut), func(t *testing.T) {
			fs := crash(base, 0)
			writeFile(t, fs, seg, full[:cut])
			e := open(t, fs, engine.Options{})
			require.Equal(t, bs[1].NextOffset(), e.EndOffset(), "the torn batch is cut, the earlier ones kept")
			requireBatches(t, bs[:2], enginetest.ReadAll(t, e, 64<<10), "after recovery")
			nb := enginetest.Batch(e.EndOffset(), 2, 77)
			require.NoError(t, e.Append(nb))
			require.NoError(t, e.Close())
			e = open(t, fs, engine.Options{})
			requireBatches(t, append(bs[:2:2], nb), enginetest.ReadAll(t, e, 64<<10), "after appending and reopening")
		})
	}
}

// TestTornTailGarbage: a crash can leave bytes that are not a frame after
// the good ones (zeros from unsynced blocks, a flipped bit): they are cut.
func TestTornTailGarbage(t *testing.T) {
	sizes := []int{100, 333, 150}
	base, bs := crashedLog(t, sizes)
	seg := path(logName(0))
	full := readFile(t, base, seg)
	lastPos := len(full) - frameHeaderLen - sizes[2]
	cases := []struct {
		name string
		mod  func([]byte) []byte
		keep int
	}{
		{"zeros after the last frame", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, 3},
		{"random bytes after the last frame", func(b []byte) []byte {
			r := newRand()
			for range 100 {
				b = append(b, byte(r.Uint32()))
			}
			return b
		}, 3},
		{"flipped bit in the last frame's data", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, 2},
		{"flipped bit in the last frame's header", func(b []byte) []byte { b[lastPos+9] ^= 0x10; return b }, 2},
		{"last frame zeroed", func(b []byte) []byte { clear(b[lastPos:]); return b }, 2},
		{"file header torn", func(b []byte) []byte { return b[:5] }, 0},
		{"empty file", func(b []byte) []byte { return b[:0] }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := crash(base, 0)
			writeFile(t, fs, seg, c.mod(append([]byte(nil), full...)))
			e := open(t, fs, engine.Options{})
			requireBatches(t, bs[:c.keep], enginetest.ReadAll(t, e, 64<<10), "after recovery")
			appendN(t, e, 2, 1, fixed(40))
			want := enginetest.ReadAll(t, e, 64<<10)
			require.NoError(t, e.Close())
			e = open(t, fs, engine.Options{})
			requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "after appending and reopening")
		})
	}
}

// manySegments writes a log of 1 KiB segments (four 200-byte batches each)
// and closes it cleanly.
func manySegments(t *testing.T, fs vfs.FS, batches int) []engine.Batch {
	t.Helper()
	e := open(t, fs, engine.Options{SegmentBytes: 1 << 10})
	bs := appendN(t, e, batches, 5, fixed(200))
	require.NoError(t, e.Close())
	require.Greater(t, len(files(t, fs, logSuffix)), 3, "the log spans several segments")
	return bs
}

// TestFlippedByteInSealedSegment: sealed segments are trusted at open, so a
// flipped byte is found by the read that meets it: ErrCorrupt, never the
// bytes; the rest of the log stays readable.
func TestFlippedByteInSealedSegment(t *testing.T) {
	const frameLen = frameHeaderLen + 200
	for _, c := range []struct {
		name string
		at   int // byte within the segment's second frame
	}{
		{"crc", 1}, {"length", 5}, {"length high byte", 7}, {"base offset", 9}, {"records", 17},
		{"first data byte", frameHeaderLen}, {"last data byte", frameLen - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMem(t)
			bs := manySegments(t, fs, 20)
			segs := files(t, fs, logSuffix)
			segBase, _ := parseName(segs[1], logSuffix)
			b := readFile(t, fs, path(segs[1]))
			b[fileHeaderLen+frameLen+c.at] ^= 0x40
			writeFile(t, fs, path(segs[1]), b)

			e := open(t, fs, engine.Options{SegmentBytes: 1 << 10})
			var hit engine.Batch
			for _, x := range bs {
				if x.BaseOffset > segBase {
					hit = x // the segment's second batch
					break
				}
			}
			_, err := e.Read(hit.BaseOffset, 1<<20)
			require.ErrorIs(t, err, engine.ErrCorrupt, "reading the damaged batch")
			assert.Contains(t, err.Error(), fmt.Sprintf("segment %d", segBase), "the error names the segment")
			next, _ := parseName(segs[2], logSuffix)
			for _, x := range bs {
				if x.BaseOffset == hit.BaseOffset {
					continue
				}
				got, err := e.Read(x.BaseOffset, 0)
				if x.BaseOffset > hit.BaseOffset && x.BaseOffset < next && errors.Is(err, engine.ErrCorrupt) {
					// Later frames of the segment are reached through the
					// damaged frame's header when no index entry lies
					// between: they may be unreadable, never wrong.
					continue
				}
				require.NoError(t, err, "batch %d elsewhere in the log", x.BaseOffset)
				require.Len(t, got, 1)
				require.Equal(t, x.Data, got[0].Data)
			}
		})
	}
}

// TestIndexRebuilt: a sealed segment's index that is missing, damaged or
// does not match is rebuilt from the segment, and written back.
func TestIndexRebuilt(t *testing.T) {
	for _, c := range []struct {
		name   string
		mangle func(t *testing.T, fs vfs.FS, p string)
	}{
		{"missing", func(t *testing.T, fs vfs.FS, p string) { require.NoError(t, fs.Remove(p)) }},
		{"empty", func(t *testing.T, fs vfs.FS, p string) { writeFile(t, fs, p, nil) }},
		{"flipped byte", func(t *testing.T, fs vfs.FS, p string) {
			b := readFile(t, fs, p)
			b[indexHeaderLen+3] ^= 1
			writeFile(t, fs, p, b)
		}},
		{"cut short", func(t *testing.T, fs vfs.FS, p string) { writeFile(t, fs, p, readFile(t, fs, p)[:20]) }},
		{"not sealed", func(t *testing.T, fs vfs.FS, p string) {
			base, _ := parseName(fs.PathBase(p), indexSuffix)
			st, err := decodeIndex(readFile(t, fs, p), base)
			require.NoError(t, err)
			st.sealed = false
			writeFile(t, fs, p, encodeIndex(st))
		}},
		{"wrong end", func(t *testing.T, fs vfs.FS, p string) {
			base, _ := parseName(fs.PathBase(p), indexSuffix)
			st, err := decodeIndex(readFile(t, fs, p), base)
			require.NoError(t, err)
			st.end--
			writeFile(t, fs, p, encodeIndex(st))
		}},
	} {
		for _, clean := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clean=%v", c.name, clean), func(t *testing.T) {
				fs := newMem(t)
				bs := manySegments(t, fs, 20)
				segs := files(t, fs, logSuffix)
				victim := path(strings.TrimSuffix(segs[1], logSuffix) + indexSuffix)
				c.mangle(t, fs, victim)
				if !clean {
					require.NoError(t, fs.Remove(path(cleanFile)))
				}
				e := open(t, fs, engine.Options{SegmentBytes: 1 << 10})
				requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "reads after the rebuild")
				base, _ := parseName(segs[1], logSuffix)
				next, _ := parseName(segs[2], logSuffix)
				st, err := decodeIndex(readFile(t, fs, victim), base)
				require.NoError(t, err, "the rebuilt index is written back")
				assert.True(t, st.sealed)
				assert.Equal(t, next, st.end, "the rebuilt index ends where the next segment begins")
			})
		}
	}
}

// TestReopenAfterRoll: a log that rolled reopens whole, after a clean Close
// and after a crash, and appends go on in the last segment.
func TestReopenAfterRoll(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			fs := newMem(t)
			opts := engine.Options{SegmentBytes: 2 << 10}
			e := open(t, fs, opts)
			bs := appendN(t, e, 30, 4, func(i int) int { return 50 + 37*i })
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			if clean {
				require.NoError(t, e.Close())
			} else {
				fs = crash(fs, 0)
			}
			nsegs := len(files(t, fs, logSuffix))
			require.Greater(t, nsegs, 5)
			e = open(t, fs, opts)
			requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after reopen")
			bs = append(bs, appendN(t, e, 1, 1, fixed(20))...)
			require.NoError(t, e.Close())
			assert.Len(t, files(t, fs, logSuffix), nsegs, "the append went into the last segment")
			e = open(t, fs, opts)
			requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after a second reopen")
		})
	}
}

// TestCleanOpenReadsNoSegmentData: after a clean Close, Open reads no
// segment data at all; after a crash it scans the active segment.
func TestCleanOpenReadsNoSegmentData(t *testing.T) {
	mem := newMem(t)
	var reads atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileRead || op.Kind == errorfs.OpFileReadAt) && strings.HasSuffix(op.Path, logSuffix) {
			reads.Add(1)
		}
		return nil
	}))
	opts := engine.Options{SegmentBytes: 4 << 10}
	e := open(t, fs, opts)
	bs := appendN(t, e, 200, 10, fixed(100))
	require.NoError(t, e.Close())

	reads.Store(0)
	e = open(t, fs, opts)
	assert.Zero(t, reads.Load(), "segment data reads while opening a cleanly closed log")
	got, err := e.Read(0, 0)
	require.NoError(t, err)
	requireBatches(t, bs[:1], got, "first batch after a clean open")
	assert.NotZero(t, reads.Load(), "the read goes through the counting filesystem")
	require.NoError(t, e.Close())

	require.NoError(t, mem.Remove(path(cleanFile)))
	reads.Store(0)
	e = open(t, fs, opts)
	assert.NotZero(t, reads.Load(), "without the marker the active segment is scanned")
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after the scan")
}

// TestCleanMarkerRemovedByFirstWrite: once the engine writes again, the
// marker must go, or a crash would trust a stale index.
func TestCleanMarkerRemovedByFirstWrite(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(*Engine) error
	}{
		{"append", func(e *Engine) error { return e.Append(enginetest.Batch(e.EndOffset(), 1, 30)) }},
		{"truncate", func(e *Engine) error { return e.Truncate(e.EndOffset() - 2) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMem(t)
			e := open(t, fs, engine.Options{})
			appendN(t, e, 5, 2, fixed(30))
			require.NoError(t, e.Close())
			require.Len(t, files(t, fs, cleanFile), 1)
			e = open(t, fs, engine.Options{})
			require.Len(t, files(t, fs, cleanFile), 1, "opening does not remove the marker")
			require.NoError(t, c.write(e))
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			after := crash(fs, 0)
			assert.Empty(t, files(t, after, cleanFile), "the marker's removal is durable once Sync returns")
			want := enginetest.ReadAll(t, e, 64<<10)
			e2 := open(t, after, engine.Options{})
			requireBatches(t, want, enginetest.ReadAll(t, e2, 64<<10), "after a crash")
		})
	}
}

func TestDirectoryOfAnotherEngine(t *testing.T) {
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, fs vfs.FS)
	}{
		{"marker of another engine", func(t *testing.T, fs vfs.FS) {
			require.NoError(t, engine.WriteFileAtomic(fs, path(engine.MarkerFile), []byte("pebble\n")))
		}},
		{"files but no marker", func(t *testing.T, fs vfs.FS) { writeFile(t, fs, path(logName(0)), []byte("hello")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMem(t)
			require.NoError(t, fs.MkdirAll(testDir, 0o755))
			c.prepare(t, fs)
			_, err := Open(testDir, engine.Options{FS: fs})
			require.ErrorIs(t, err, engine.ErrWrongEngine)
		})
	}
}

func TestCorruptStartFile(t *testing.T) {
	fs := newMem(t)
	e := open(t, fs, engine.Options{})
	appendN(t, e, 5, 2, fixed(30))
	require.NoError(t, e.DeleteBefore(4))
	require.NoError(t, e.Close())
	b := readFile(t, fs, path(startFile))
	b[9] ^= 1
	writeFile(t, fs, path(startFile), b)
	_, err := Open(testDir, engine.Options{FS: fs})
	require.ErrorIs(t, err, engine.ErrCorrupt, "a damaged log start is not guessed")
}

// TestCloseOfANewEmptyLogWritesNothing: a log created and closed without a
// change syncs and writes nothing (its next open has nothing to scan, and a
// broker that made thousands of partitions exits without a sync for each),
// reopens empty and takes appends; a log that took one writes its clean
// marker as before.
func TestCloseOfANewEmptyLogWritesNothing(t *testing.T) {
	mem := newMem(t)
	var counting atomic.Bool
	var writes atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if counting.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpFileClose {
			writes.Add(1)
		}
		return nil
	}))
	opts := engine.Options{SegmentBytes: 4 << 10}
	e := open(t, fs, opts)
	counting.Store(true)
	require.NoError(t, e.Close())
	counting.Store(false)
	assert.Zero(t, writes.Load(), "writes and syncs closing a new, empty log")

	e = open(t, fs, opts)
	require.Zero(t, e.EndOffset())
	bs := appendN(t, e, 3, 1, fixed(100))
	require.NoError(t, e.Close())
	_, err := mem.Stat(path(cleanFile))
	require.NoError(t, err, "a log that took batches records its clean shutdown")
	e = open(t, fs, opts)
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after the reopen")
}
