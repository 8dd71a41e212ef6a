package engine_test

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

func TestCheckedFiles(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/d", 0o755))
	_, found, err := engine.ReadChecked(fs, "/d/f", "TEST")
	require.NoError(t, err)
	require.False(t, found)
	require.NoError(t, engine.WriteChecked(fs, "/d/f", "TEST", []byte("payload")))
	got, found, err := engine.ReadChecked(fs, "/d/f", "TEST")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []byte("payload"), got)
	_, _, err = engine.ReadChecked(fs, "/d/f", "OTHR")
	require.ErrorIs(t, err, engine.ErrCorrupt, "another magic")

	good, err := engine.DecodeChecked("TEST", []byte("TEST\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"))
	require.ErrorIs(t, err, engine.ErrCorrupt, "a wrong CRC")
	require.Nil(t, good)
	f, err := fs.Open("/d/f")
	require.NoError(t, err)
	b := make([]byte, 100)
	n, _ := f.Read(b)
	f.Close()
	for i := range n {
		flipped := append([]byte(nil), b[:n]...)
		flipped[i] ^= 0x40
		_, err := engine.DecodeChecked("TEST", flipped)
		require.ErrorIs(t, err, engine.ErrCorrupt, "byte %d flipped", i)
	}
	_, err = engine.DecodeChecked("TEST", b[:n-1])
	require.ErrorIs(t, err, engine.ErrCorrupt, "torn")
}
