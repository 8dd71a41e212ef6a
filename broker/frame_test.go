package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sized(n uint32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, n), body...)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 3*frameChunk+5)
	for _, tc := range []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{"small", sized(3, []byte("abc")), 100, []byte("abc"), nil},
		{"exactly the maximum", sized(4, []byte("abcd")), 4, []byte("abcd"), nil},
		{"larger than several chunks", sized(uint32(len(big)), big), int32(len(big)), big, nil},
		{"over the maximum", sized(5, []byte("abcde")), 4, nil, errFrameTooLarge},
		{"negative", sized(0x80000000, nil), 100, nil, errFrameNegative},
		{"empty", sized(0, nil), 100, nil, errFrameEmpty},
		{"truncated body", sized(10, []byte("abc")), 100, nil, io.ErrUnexpectedEOF},
		{"truncated big body", sized(uint32(len(big)+1), big), int32(len(big) + 1), nil, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
		{"nothing", nil, 100, nil, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.in), tc.max)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// trickle yields n bytes of zeros, then EOF.
type trickle struct{ n int }

func (r *trickle) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

// TestLyingLengthAllocatesWhatArrives: a frame that claims 1 GiB but sends
// little costs about what it sent (one chunk), not what it claimed.
func TestLyingLengthAllocatesWhatArrives(t *testing.T) {
	for _, sent := range []int{10, frameChunk + 10, 3 * frameChunk} {
		r := io.MultiReader(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<30)), &trickle{n: sent})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := readFrame(r, 1<<30)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		alloc := after.TotalAlloc - before.TotalAlloc
		assert.LessOrEqual(t, alloc, uint64(4*max(sent, frameChunk)), "bytes allocated for a 1 GiB claim carrying %d bytes", sent)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(sized(3, []byte("abc")))
	f.Add(sized(0x7fffffff, []byte("abc")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 1 << 16
		got, err := readFrame(bytes.NewReader(in), max)
		if err != nil {
			return
		}
		n := binary.BigEndian.Uint32(in)
		if uint32(len(got)) != n || n > max || !bytes.Equal(got, in[4:4+n]) {
			t.Fatalf("frame of %d bytes read as %d bytes", n, len(got))
		}
	})
}
