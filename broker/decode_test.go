package broker

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimFrames are request frames for key and version whose body claims two
// billion of whatever comes first, in every encoding a count can take.
func claimFrames(key, version int16, flexible bool) [][]byte {
	hdr := binary.BigEndian.AppendUint16(nil, uint16(key))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(version))
	hdr = binary.BigEndian.AppendUint32(hdr, 1)
	hdr = binary.BigEndian.AppendUint16(hdr, 0xffff)
	if flexible {
		hdr = append(hdr, 0)
	}
	var out [][]byte
	for _, claim := range [][]byte{
		{0x7f, 0xff, 0xff, 0xff},
		binary.AppendUvarint(nil, 1<<31),
		binary.AppendUvarint(nil, 1<<31-1),
		{0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff},
		{0xff, 0xff, 0x7f, 0xff, 0xff, 0xff},
	} {
		out = append(out, append(append([]byte(nil), hdr...), claim...))
	}
	return out
}

// TestDecodeDoesNotTrustCounts: kmsg checks every array count against the
// bytes left before allocating; this proves it for every version we serve,
// so a 15-byte frame cannot make the broker allocate gigabytes.
func TestDecodeDoesNotTrustCounts(t *testing.T) {
	for _, a := range registered(clientListener) {
		for v := a.min; v <= a.max; v++ {
			for _, flexible := range []bool{false, true} {
				for _, f := range claimFrames(a.key, v, flexible) {
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					_, _, _, _ = decode(f, clientListener)
					runtime.ReadMemStats(&after)
					assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10),
						"%s v%d: decoding a %d-byte frame allocated %d bytes", a.name, v, len(f), after.TotalAlloc-before.TotalAlloc)
				}
			}
		}
	}
}

func TestHeaderParsing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		frame   []byte
		want    header
		rest    int
		wantErr bool
	}{
		{"null client id", []byte{0, 3, 0, 9, 0, 0, 0, 5, 0xff, 0xff, 1}, header{3, 9, 5, ""}, 1, false},
		{"client id", []byte{0, 1, 0, 4, 0, 0, 0, 1, 0, 2, 'h', 'i'}, header{1, 4, 1, "hi"}, 0, false},
		{"short", []byte{0, 1, 0, 4, 0, 0, 0, 1, 0}, header{}, 0, true},
		{"client id past the end", []byte{0, 1, 0, 4, 0, 0, 0, 1, 0, 9, 'h'}, header{}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rest, err := parseHeaderPrefix(tc.frame)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, h)
			assert.Len(t, rest, tc.rest)
		})
	}
}

func TestSkipTags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		rest    int
		wantErr bool
	}{
		{"none", []byte{0, 9}, 1, false},
		{"two fields", []byte{2, 0, 1, 'a', 5, 2, 'b', 'c', 9}, 1, false},
		{"field longer than the frame", []byte{1, 0, 50, 'a'}, 0, true},
		{"count without fields", []byte{3}, 0, true},
		{"empty", nil, 0, true},
		{"overlong uvarint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, err := skipTags(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, rest, tc.rest)
		})
	}
}
