package segment

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// TestRecycledSegment: a segment DeleteBefore dropped becomes the spare,
// the next segment is that file written over, and none of its old frames is
// ever read as the new segment's, after a clean reopen or a crash that
// keeps any share of the unsynced writes.
func TestRecycledSegment(t *testing.T) {
	opts := engine.Options{SegmentBytes: 4 << 10}
	fs := newMem(t)
	e := open(t, fs, opts)
	bs := appendN(t, e, 40, 3, fixed(300)) // 13 frames a segment
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.NoError(t, e.DeleteBefore(bs[14].BaseOffset))
	require.Equal(t, []string{spareFile}, files(t, fs, spareFile), "the first dropped segment is the spare")
	old, err := fs.Stat(path(spareFile))
	require.NoError(t, err)

	// Appends roll into the spare: fewer, smaller frames than it held, so
	// old frames follow the new ones in the file.
	more := appendN(t, e, 7, 2, fixed(100))
	more = append(more, appendN(t, e, 20, 1, fixed(180))...)
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	assert.Empty(t, files(t, fs, spareFile), "the spare was used")
	recycled := e.segs[len(e.segs)-1]
	fi, err := fs.Stat(recycled.logPath)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), recycled.endPos.Load(), "the recycled file holds old bytes past the log end")
	require.Equal(t, old.Size(), fi.Size())
	want := append(bs[14:len(bs):len(bs)], more...)
	requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "reading the recycled segment")

	for _, pct := range []int{0, 30, 100} {
		t.Run(fmt.Sprintf("crash keeping %d%%", pct), func(t *testing.T) {
			after := crash(fs, pct)
			e := open(t, after, opts)
			requireBatches(t, want, enginetest.ReadAll(t, e, 64<<10), "after a crash")
			nb := enginetest.Batch(e.EndOffset(), 1, 50)
			require.NoError(t, e.Append(nb))
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			e = open(t, crash(after, 0), opts)
			requireBatches(t, append(want[:len(want):len(want)], nb), enginetest.ReadAll(t, e, 64<<10), "after a second crash")
		})
	}

	// A clean reopen goes on writing over the old frames.
	require.NoError(t, e.Close())
	e = open(t, fs, opts)
	nb := appendN(t, e, 3, 1, fixed(60))
	require.NoError(t, e.Close())
	e = open(t, crash(fs, 0), opts)
	requireBatches(t, append(want[:len(want):len(want)], nb...), enginetest.ReadAll(t, e, 64<<10), "after a clean reopen and more appends")
}

// TestSpareOnlyFromDeleteBefore: a Truncate's dropped segments hold
// offsets the log will reuse, so they are never recycled.
func TestSpareOnlyFromDeleteBefore(t *testing.T) {
	opts := engine.Options{SegmentBytes: 4 << 10}
	fs := newMem(t)
	e := open(t, fs, opts)
	bs := appendN(t, e, 60, 3, fixed(300))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.NoError(t, e.Truncate(bs[5].BaseOffset))
	assert.Empty(t, files(t, fs, spareFile))
}

// TestTailStates: recovery tells what follows the last good frame of the
// active segment (nothing, zeros, a recycled file's old frame, a torn
// frame), keeps every good frame in each case, and goes on in the same
// file only when nothing follows.
func TestTailStates(t *testing.T) {
	mem := newMem(t)
	e := open(t, mem, engine.Options{})
	require.NoError(t, e.DeleteBefore(100)) // the log, and its segment, start at 100
	bs := appendN(t, e, 3, 3, func(i int) int { return []int{100, 333, 150}[i] })
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	base := crash(mem, 0)
	seg := path(logName(100))
	full := readFile(t, base, seg)
	old := make([]byte, frameHeaderLen+40)
	putFrame(old, 5, 1, make([]byte, 40)) // an earlier segment's frame
	for _, tc := range []struct {
		name  string
		after []byte
		kind  string
	}{
		{"nothing", nil, ""},
		{"zeros", make([]byte, 4096), tailZeroed},
		{"a few zeros", make([]byte, 7), tailZeroed},
		{"an old frame", old, tailRecycled},
		{"a torn frame", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, tailTorn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := crash(base, 0)
			writeFile(t, fs, seg, append(append([]byte(nil), full...), tc.after...))
			var logs strings.Builder
			e := open(t, fs, engine.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "every good frame is kept")
			if tc.kind == "" {
				assert.NotContains(t, logs.String(), "cutting the log")
				assert.Equal(t, []string{logName(100)}, files(t, fs, logSuffix), "appends go on in the same file")
				return
			}
			assert.Contains(t, logs.String(), `after="`+tc.kind+`"`)
			assert.Equal(t, []string{logName(100), logName(bs[2].NextOffset())}, files(t, fs, logSuffix),
				"the segment is sealed at its last good frame and a new one started")
		})
	}
}
