package pebble

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingFS is a storeFS over a MemFS whose operations of the given kinds, on
// files whose names end in suffix, fail while failing is set.
func failingFS(suffix string, kinds ...errorfs.OpKind) (*storeFS, *atomic.Bool) {
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !failing.Load() || !strings.HasSuffix(op.Path, suffix) {
			return nil
		}
		for _, k := range kinds {
			if op.Kind == k {
				return errorfs.ErrInjected
			}
		}
		return nil
	}))
	return newStoreFS(fs), &failing
}

// TestStoreFSHidesWALFailures checks what pebble sees of a failing WAL: a
// success, always, while the failure freezes the disk and is kept for the
// engine; the same failure on any other file reaches pebble.
func TestStoreFSHidesWALFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		kind errorfs.OpKind
		op   func(f vfs.File) error
	}{
		{"write", errorfs.OpFileWrite, func(f vfs.File) error { _, err := f.Write([]byte("x")); return err }},
		{"write at", errorfs.OpFileWriteAt, func(f vfs.File) error { _, err := f.WriteAt([]byte("x"), 0); return err }},
		{"sync", errorfs.OpFileSync, func(f vfs.File) error { return f.Sync() }},
		{"sync data", errorfs.OpFileSyncData, func(f vfs.File) error { return f.SyncData() }},
		{"sync to", errorfs.OpFileSyncTo, func(f vfs.File) error { _, err := f.SyncTo(1); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, file := range []struct {
				name string
				wal  bool
			}{{"000004.log", true}, {"000005.sst", false}} {
				fs, failing := failingFS(file.name, c.kind)
				f, err := fs.Create(file.name, vfs.WriteCategoryUnspecified)
				require.NoError(t, err)
				failing.Store(true)
				err = c.op(f)
				if file.wal {
					assert.NoError(t, err, "pebble is told a WAL %s succeeded", c.name)
				} else {
					assert.ErrorIs(t, err, errorfs.ErrInjected, "pebble hears of a failed %s of an sstable", c.name)
				}
				assert.ErrorIs(t, fs.err(), errorfs.ErrInjected, "the failure is kept for the engine")
				_, err = fs.Create("000006.sst", vfs.WriteCategoryUnspecified)
				assert.ErrorIs(t, err, errFrozen, "the disk froze at the failure")
			}
		})
	}
}

// TestStoreFSAfterTheFreeze checks that once the disk froze, a WAL can still
// be created (pebble panics when it cannot rotate its WAL) but writes
// nothing, that other files cannot be, and that closing reports no error.
func TestStoreFSAfterTheFreeze(t *testing.T) {
	fs, failing := failingFS(".log", errorfs.OpFileSync)
	sst, err := fs.Create("000003.sst", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	sst.(*storeFile).File = closeFails{sst.(*storeFile).File}
	old, err := fs.Create("000004.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	failing.Store(true)
	require.NoError(t, old.Sync())
	require.Error(t, fs.err(), "the failed WAL sync froze the disk")

	wal, err := fs.Create("000007.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err, "a WAL is created after the freeze")
	n, err := wal.Write([]byte("record"))
	assert.NoError(t, err)
	assert.Equal(t, 6, n)
	assert.NoError(t, wal.Sync())
	info, err := wal.Stat()
	require.NoError(t, err)
	assert.Zero(t, info.Size())
	assert.NoError(t, wal.Close())
	_, err = fs.Stat("000007.log")
	assert.Error(t, err, "the WAL created after the freeze is not on disk")

	_, err = fs.ReuseForWrite("000004.log", "000008.log", vfs.WriteCategoryUnspecified)
	assert.NoError(t, err, "a recycled WAL is handed out after the freeze")
	_, err = fs.Stat("000008.log")
	assert.Error(t, err, "but nothing was renamed on disk")

	_, err = fs.Create("000009.sst", vfs.WriteCategoryUnspecified)
	assert.ErrorIs(t, err, errFrozen, "no other file is created after the freeze")
	assert.NoError(t, old.Close())
	assert.NoError(t, sst.Close(), "closing any file after the freeze reports no failure")
}

// closeFails is a file whose Close fails (errorfs never fails a close).
type closeFails struct{ vfs.File }

func (f closeFails) Close() error {
	_ = f.File.Close()
	return errorfs.ErrInjected
}

// TestStoreFSFailedClose checks that a failed close freezes the disk, and
// that pebble hears of it only for a file that is not a WAL.
func TestStoreFSFailedClose(t *testing.T) {
	for _, c := range []struct {
		name string
		wal  bool
	}{{"000004.log", true}, {"000005.sst", false}} {
		t.Run(c.name, func(t *testing.T) {
			fs := newStoreFS(vfs.NewMem())
			f, err := fs.Create(c.name, vfs.WriteCategoryUnspecified)
			require.NoError(t, err)
			f.(*storeFile).File = closeFails{f.(*storeFile).File}
			err = f.Close()
			if c.wal {
				assert.NoError(t, err, "pebble is told the WAL closed")
			} else {
				assert.ErrorIs(t, err, errorfs.ErrInjected, "pebble hears of the failed close")
			}
			assert.ErrorIs(t, fs.err(), errorfs.ErrInjected, "the failure is kept for the engine")
		})
	}
}

// TestStoreFSAbandonsAFailingOpen checks that while pebble.Open runs, a
// failed change, and every later one, reads to pebble as a success that
// changes nothing, and that the failure is kept for openStore.
func TestStoreFSAbandonsAFailingOpen(t *testing.T) {
	fs, failing := failingFS(".sst", errorfs.OpFileSync)
	fs.startOpening()
	f, err := fs.Create("000005.sst", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	failing.Store(true)
	assert.NoError(t, f.Sync(), "the failing change reads as a success")
	assert.ErrorIs(t, fs.err(), errorfs.ErrInjected, "and is kept")

	g, err := fs.Create("000006.sst", vfs.WriteCategoryUnspecified)
	require.NoError(t, err, "later changes succeed")
	n, err := g.Write([]byte("data"))
	assert.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.NoError(t, fs.Rename("000005.sst", "000007.sst"))
	_, err = fs.Stat("000006.sst")
	assert.Error(t, err, "without reaching the disk")
	_, err = fs.Stat("000005.sst")
	assert.NoError(t, err, "nothing was renamed either")
	names, err := fs.List("/no/such/dir")
	assert.NoError(t, err, "an abandoned store lists without failing")
	assert.Empty(t, names)
	assert.ErrorIs(t, fs.endOpening(), errorfs.ErrInjected, "openStore learns of the failure")
}

// TestStoreFSFreezesAfterOpen checks that once pebble.Open returned, a
// failure freezes the disk and reaches pebble (for a file that is not a
// WAL) instead of abandoning the store.
func TestStoreFSFreezesAfterOpen(t *testing.T) {
	fs, failing := failingFS(".sst", errorfs.OpFileSync)
	fs.startOpening()
	require.NoError(t, fs.endOpening(), "nothing failed while opening")
	f, err := fs.Create("000005.sst", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	failing.Store(true)
	assert.ErrorIs(t, f.Sync(), errorfs.ErrInjected)
	_, err = fs.Create("000006.sst", vfs.WriteCategoryUnspecified)
	assert.ErrorIs(t, err, errFrozen)
	_, err = fs.List("/no/such/dir")
	assert.Error(t, err, "a store in use lists as the disk does")
}
