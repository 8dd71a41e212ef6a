package segment

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrameDetectsEveryFlippedBit: a frame with any single bit flipped fails
// its header checks or its CRC.
func TestFrameDetectsEveryFlippedBit(t *testing.T) {
	data := []byte("a batch of bytes that the engine never parses")
	frame := make([]byte, frameHeaderLen+len(data))
	putFrame(frame, 1234, 7, data)
	h, err := decodeFrameHeader(frame, 1234)
	require.NoError(t, err)
	require.NoError(t, checkFrame(frame, h))
	assert.Equal(t, frameHeader{crc: h.crc, length: uint32(len(data)), base: 1234, records: 7}, h)

	for bit := range len(frame) * 8 {
		b := append([]byte(nil), frame...)
		b[bit/8] ^= 1 << (bit % 8)
		h, err := decodeFrameHeader(b, 1234)
		if err == nil && int(h.length) == len(data) {
			err = checkFrame(b, h)
		} else if err == nil {
			err = errBadFrame // a changed length no longer matches the frame
		}
		assert.ErrorIs(t, err, errBadFrame, "bit %d flipped", bit)
	}
}

func TestFrameHeaderChecks(t *testing.T) {
	frame := make([]byte, frameHeaderLen+1)
	for _, c := range []struct {
		name    string
		base    int64
		records int32
		data    []byte
		want    int64
	}{
		{"wrong base", 10, 1, []byte{1}, 11},
		{"no records", 10, 0, []byte{1}, 10},
		{"negative records", 10, -2, []byte{1}, 10},
		{"no data", 10, 1, nil, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			putFrame(frame[:frameHeaderLen+len(c.data)], c.base, c.records, c.data)
			_, err := decodeFrameHeader(frame, c.want)
			assert.ErrorIs(t, err, errBadFrame)
		})
	}
}

func TestIndexRoundTripAndDamage(t *testing.T) {
	st := indexState{sealed: true, base: 100, end: 900, endPos: 50000, entries: []indexEntry{
		{0, 8}, {120, 4200}, {400, 9000}, {799, 49000},
	}}
	b := encodeIndex(st)
	got, err := decodeIndex(b, 100)
	require.NoError(t, err)
	assert.Equal(t, st, got)
	_, err = decodeIndex(b, 101)
	assert.ErrorIs(t, err, errBadIndex, "another segment's index")
	for i := range b {
		d := append([]byte(nil), b...)
		d[i] ^= 0x08
		_, err := decodeIndex(d, 100)
		assert.ErrorIs(t, err, errBadIndex, "byte %d flipped", i)
	}
	for n := range len(b) {
		_, err := decodeIndex(b[:n], 100)
		assert.ErrorIs(t, err, errBadIndex, "cut to %d bytes", n)
	}
}

func TestLookup(t *testing.T) {
	entries := []indexEntry{{0, 8}, {10, 5000}, {25, 9100}}
	for _, c := range []struct {
		offset, wantBase, wantPos int64
	}{
		{1000, 1000, 8}, {1005, 1000, 8}, {1010, 1010, 5000}, {1024, 1010, 5000}, {1025, 1025, 9100}, {5000, 1025, 9100},
	} {
		t.Run(fmt.Sprint(c.offset), func(t *testing.T) {
			base, pos := lookup(1000, entries, c.offset)
			assert.Equal(t, c.wantBase, base)
			assert.Equal(t, c.wantPos, pos)
		})
	}
	base, pos := lookup(1000, nil, 1003)
	assert.Equal(t, int64(1000), base, "no entries: the segment's first frame")
	assert.Equal(t, int64(fileHeaderLen), pos)
}

func TestIndexBuilderSpacing(t *testing.T) {
	b := newIndexBuilder()
	var got []indexEntry
	pos := int64(fileHeaderLen)
	for i := range 100 {
		if e, ok := b.add(0, int64(i), pos); ok {
			got = append(got, e)
		}
		pos += 1000
	}
	require.NotEmpty(t, got)
	assert.Equal(t, indexEntry{0, fileHeaderLen}, got[0], "the first frame is indexed")
	for i := 1; i < len(got); i++ {
		gap := int64(got[i].pos - got[i-1].pos)
		assert.GreaterOrEqual(t, gap, int64(indexIntervalBytes))
		assert.Less(t, gap, int64(indexIntervalBytes+1000), "no more than one frame past the interval")
	}
}

// FuzzScanSegment: whatever bytes a segment file holds, scanning it neither
// panics nor claims bytes past the file, and every frame it vouches for
// reads back.
func FuzzScanSegment(f *testing.F) {
	good := make([]byte, fileHeaderLen)
	putFileHeader(good)
	for i := range 3 {
		data := []byte(fmt.Sprintf("batch %d", i))
		fr := make([]byte, frameHeaderLen+len(data))
		putFrame(fr, int64(40+2*i), 2, data)
		good = append(good, fr...)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte{})
	f.Add(append(append([]byte(nil), good...), make([]byte, 100)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := vfs.NewMem()
		file, err := fs.Create("s", vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		_, err = file.Write(append([]byte(nil), b...))
		require.NoError(t, err)
		st, err := scanSegment(file, 40, 1<<40)
		require.NoError(t, err)
		require.LessOrEqual(t, st.endPos, int64(len(b)))
		if st.end == 40 {
			return
		}
		s := newSegment(fs, "", 40)
		s.f = file
		s.adoptLocked(st)
		bs, _, _, _, err := s.read(nil, 40, 1<<20, nil, 0)
		if err != nil && !errors.Is(err, errBadFrame) {
			require.NoError(t, err)
		}
		require.NotEmpty(t, bs)
		require.Equal(t, st.end, bs[len(bs)-1].NextOffset(), "every vouched frame reads back")
		// Into lent memory too small for it: the same batches.
		lent, _, _, _, err := s.read(&arena{buf: make([]byte, 0, 7)}, 40, 1<<20, nil, 0)
		require.NoError(t, err)
		require.Equal(t, bs, lent, "read into an arena")
	})
}
