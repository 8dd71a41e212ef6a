package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

// Tests of which frames a read checks (see Reading in the package doc).

// damage flips bit 0x40 of byte at of the segment file name, in place,
// while the engine may hold the file open.
func damage(t *testing.T, fs vfs.FS, name string, at int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path(name), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], at)
	require.NoError(t, err)
	b[0] ^= 0x40
	_, err = f.WriteAt(b[:], at)
	require.NoError(t, err)
}

// TestReadTrustsOwnFrames: a frame this process framed is served without
// its CRC check (its batch's own checksum is the receiver's to verify), but
// its header still is checked, so damage there is ErrCorrupt, never some
// other batch.
func TestReadTrustsOwnFrames(t *testing.T) {
	const data = 300
	frame := int64(frameHeaderLen + data)
	for _, c := range []struct {
		name    string
		at      int64 // byte within the second frame
		corrupt bool  // the read of the second batch is ErrCorrupt
	}{
		{"data byte: served, the batch CRC is the receiver's check", frameHeaderLen + 7, false},
		{"length", 5, true},
		{"length low byte", 4, true},
		{"base offset", 9, true},
		{"records", 17, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMem(t)
			e := open(t, fs, engine.Options{Sync: engine.SyncAlways})
			bs := appendN(t, e, 4, 2, fixed(data))
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			segs := files(t, fs, logSuffix)
			require.Len(t, segs, 1)
			damage(t, fs, segs[0], fileHeaderLen+frame+c.at)

			got, err := e.Read(bs[1].BaseOffset, 0)
			if c.corrupt {
				require.ErrorIs(t, err, engine.ErrCorrupt, "a damaged header is never served")
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, bs[1].BaseOffset, got[0].BaseOffset, "the batch asked for, whatever its bytes")
			assert.NotEqual(t, bs[1].Data, got[0].Data, "the damaged bytes were read from the file")
		})
	}
}

// TestReadChecksOldFramesOnce: frames from before Open are checked by the
// reads that serve them; once a read in order has checked a frame it is
// not checked again, so damage after that goes unseen by the engine, and
// damage before it is ErrCorrupt.
func TestReadChecksOldFramesOnce(t *testing.T) {
	const data = 300
	frame := int64(frameHeaderLen + data)
	fs := newMem(t)
	e := open(t, fs, engine.Options{})
	bs := appendN(t, e, 6, 2, fixed(data))
	require.NoError(t, e.Close())
	e = open(t, fs, engine.Options{})
	segs := files(t, fs, logSuffix)
	require.Len(t, segs, 1)

	// The first three frames, read in order, are checked once.
	got, err := e.Read(0, 3*data)
	require.NoError(t, err)
	requireBatches(t, bs[:3], got, "the first three")
	damage(t, fs, segs[0], fileHeaderLen+frameHeaderLen+3)
	got, err = e.Read(0, 0)
	require.NoError(t, err, "a checked frame is not checked again")
	require.Len(t, got, 1)

	// The fifth, damaged before any read reached it, is caught.
	damage(t, fs, segs[0], fileHeaderLen+4*frame+frameHeaderLen+3)
	_, err = e.Read(bs[4].BaseOffset, 0)
	require.ErrorIs(t, err, engine.ErrCorrupt, "an old frame is checked on its first read")
	_, err = e.Read(bs[4].BaseOffset, 0)
	require.ErrorIs(t, err, engine.ErrCorrupt, "and on every read until it passes")

	// Appends after Open are this process's frames.
	more := appendN(t, e, 2, 2, fixed(data))
	got, err = e.Read(more[0].BaseOffset, 1<<20)
	require.NoError(t, err)
	requireBatches(t, more, got, "appended after Open")
}
