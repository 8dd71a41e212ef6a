package enginetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// testReadInto checks the optional engine.BufferReader against Read: the same
// batches for every offset and budget, whatever buffer is lent, and the same
// errors outside the log.
func testReadInto(t *testing.T, h *harness) {
	e := h.openWith(engine.Options{SegmentBytes: 8 << 10})
	into, ok := engine.As[engine.BufferReader](e)
	if !ok {
		t.Skipf("engine %s does not implement engine.BufferReader (optional)", h.d.Name)
	}
	want := appendN(t, e, 60, 3, 700)
	var buf []byte
	for _, maxBytes := range []int{0, 1, 700, 1500, 5000, 1 << 20} {
		for _, b := range want {
			for _, off := range []int64{b.BaseOffset, b.LastOffset()} {
				exp, err := e.Read(off, maxBytes)
				require.NoError(t, err)
				var got []engine.Batch
				got, buf, err = into.ReadInto(buf, off, maxBytes)
				require.NoError(t, err, "contract: ReadInto(%d, %d) succeeds where Read does", off, maxBytes)
				sameBatches(t, exp, got, "contract: ReadInto returns what Read returns")
			}
		}
	}
	// A lent buffer that is too small is replaced, and the bytes still check.
	got, _, err := into.ReadInto(make([]byte, 0, 10), 0, 1<<20)
	require.NoError(t, err)
	for _, b := range got {
		assert.NoError(t, Check(b), "contract: ReadInto into a small buffer returns whole, checked batches")
	}
	end := e.EndOffset()
	got, _, err = into.ReadInto(buf, end, 100)
	assert.NoError(t, err, "contract: ReadInto at EndOffset is not an error")
	assert.Empty(t, got)
	for _, off := range []int64{-1, end + 1} {
		_, _, err := into.ReadInto(buf, off, 100)
		assert.ErrorIs(t, err, engine.ErrOffsetOutOfRange, "contract: ReadInto(%d) outside the log is out of range", off)
	}
}
