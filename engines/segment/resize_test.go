package segment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// SetSegmentBytes: segments rolled after it have the new size; what is
// written stays readable, and a reopen with the old options reads it all.
func TestSetSegmentBytes(t *testing.T) {
	opts := engine.Options{SegmentBytes: 64 << 10}
	fs := newMem(t)
	e := open(t, fs, opts)
	bs := appendN(t, e, 20, 1, fixed(300))
	require.Len(t, files(t, fs, logSuffix), 1, "6 KiB fit the 64 KiB segment")

	resizer, ok := engine.As[engine.SegmentResizer](e)
	require.True(t, ok)
	resizer.SetSegmentBytes(2 << 10)
	bs = append(bs, appendN(t, e, 20, 1, fixed(300))...)
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.GreaterOrEqual(t, len(files(t, fs, logSuffix)), 4, "6 KiB more in 2 KiB segments")
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after the resize")

	resizer.SetSegmentBytes(1) // clamped to the minimum, not a file per batch
	require.Equal(t, int64(segmentBytesMin), e.segmentBytes.Load())
	require.NoError(t, e.Close())
	e = open(t, fs, opts)
	requireBatches(t, bs, enginetest.ReadAll(t, e, 64<<10), "after a reopen")
}
