package segment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// fileBytes is the sum of the sizes of the segment files.
func fileBytes(t *testing.T, e *Engine) int64 {
	t.Helper()
	var n int64
	for _, name := range files(t, e.fs, logSuffix) {
		fi, err := e.fs.Stat(e.fs.PathJoin(testDir, name))
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// SizeBytes: the segment files' bytes, growing with appends, the same
// after a reopen (sealed segments not read yet), smaller once DeleteBefore
// removed segments.
func TestSizeBytes(t *testing.T) {
	opts := engine.Options{SegmentBytes: 4 << 10}
	fs := newMem(t)
	e := open(t, fs, opts)
	sizer, ok := engine.As[engine.Sizer](e)
	require.True(t, ok)
	empty := sizer.SizeBytes()
	require.Equal(t, int64(fileHeaderLen), empty, "one empty segment: its header")

	appendN(t, e, 40, 1, fixed(300))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	grown := sizer.SizeBytes()
	require.Greater(t, grown, int64(40*300), "at least the data appended")
	require.Equal(t, fileBytes(t, e), grown, "the segment files' bytes once written")

	require.NoError(t, e.Close())
	e = open(t, fs, opts)
	require.Equal(t, grown, e.SizeBytes(), "after a reopen")

	require.NoError(t, e.DeleteBefore(30))
	require.Less(t, e.SizeBytes(), grown, "segments wholly before 30 removed")
	require.Equal(t, fileBytes(t, e), e.SizeBytes())
}
