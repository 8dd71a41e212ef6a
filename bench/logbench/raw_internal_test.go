package logbench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRawRingWrapsAround(t *testing.T) {
	cases := []struct {
		name    string
		batches []string
		want    string
	}{
		{"fits", []string{"abc", "def"}, "abcdef\x00\x00\x00\x00"},
		{"wraps inside a batch", []string{"abcdefgh", "ijklm"}, "klmdefghij"},
		{"batch longer than the ring", []string{"0123456789ABCD"}, "ABCD456789"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in, err := openRawIngester(dir, 10)
			require.NoError(t, err)
			for _, b := range c.batches {
				require.NoError(t, in.WriteBatch([]byte(b), 1))
			}
			require.NoError(t, in.Close())
			got, err := os.ReadFile(filepath.Join(dir, rawFileName))
			require.NoError(t, err)
			assert.Equal(t, c.want, string(got))
		})
	}
}

func TestRawAppendScansBack(t *testing.T) {
	dir := t.TempDir()
	in, err := openRawIngester(dir, 0)
	require.NoError(t, err)
	data := bytes.Repeat([]byte("0123456789"), 30)
	require.NoError(t, in.WriteBatch(data[:100], 10))
	require.NoError(t, in.WriteBatch(data[100:], 20))
	require.NoError(t, in.Close())

	sc, err := openRawScanner(dir, 10)
	require.NoError(t, err)
	records, n, err := sc.Scan()
	require.NoError(t, err)
	assert.Equal(t, int64(30), records)
	assert.Equal(t, int64(300), n)
	require.NoError(t, sc.Close())

	sc, err = openRawScanner(dir, 7)
	require.NoError(t, err)
	defer sc.Close()
	_, _, err = sc.Scan()
	assert.ErrorContains(t, err, "not a whole number", "300 bytes are not 7-byte records")
}
