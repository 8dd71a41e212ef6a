package powerfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine/powerfs"
)

// mount serves a powerfs over a fresh backing directory and returns the
// backing directory, the mount point and the mount; it skips the test when
// FUSE is not available. These tests use the mount from the serving
// process with plain reads and writes only (no mmap): see the package doc.
func mount(t *testing.T, opts powerfs.Options) (string, string, *powerfs.FS) {
	t.Helper()
	backing, mnt := t.TempDir(), t.TempDir()
	m, err := powerfs.Mount(backing, mnt, opts)
	if errors.Is(err, powerfs.ErrUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Unmount()) })
	return backing, mnt, m
}

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func TestUnsyncedWritesAreRolledBack(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{})
	path := filepath.Join(mnt, "f")
	writeFile(t, path, []byte("synced"), true)
	writeFile(t, path, []byte("UNSYNCED and longer"), false)

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "UNSYNCED and longer", string(got), "reads see unsynced writes before the power loss")

	require.NoError(t, m.PowerLoss())
	got, err = os.ReadFile(filepath.Join(backing, "f"))
	require.NoError(t, err)
	assert.Equal(t, "synced", string(got), "the backing file is back at its last fsync")
}

func TestSyncedWritesSurvive(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{})
	path := filepath.Join(mnt, "f")
	writeFile(t, path, []byte("one"), true)
	writeFile(t, path, []byte("two and more"), true)
	require.NoError(t, m.PowerLoss())
	got, err := os.ReadFile(filepath.Join(backing, "f"))
	require.NoError(t, err)
	assert.Equal(t, "two and more", string(got))
}

func TestTruncationIsUndoneUnlessSynced(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{})
	data := bytes.Repeat([]byte("0123456789"), 1000)
	writeFile(t, filepath.Join(mnt, "cut"), data, true)
	writeFile(t, filepath.Join(mnt, "trunc"), data, true)
	writeFile(t, filepath.Join(mnt, "kept"), data, true)

	require.NoError(t, os.Truncate(filepath.Join(mnt, "cut"), 10))
	f, err := os.OpenFile(filepath.Join(mnt, "trunc"), os.O_RDWR|os.O_TRUNC, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	f, err = os.OpenFile(filepath.Join(mnt, "kept"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(10))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	require.NoError(t, m.PowerLoss())
	for name, want := range map[string][]byte{"cut": data, "trunc": data, "kept": data[:10]} {
		got, err := os.ReadFile(filepath.Join(backing, name))
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
}

func TestMetadataIsDurableAtOnce(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{})
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "d"), 0o755))
	writeFile(t, filepath.Join(mnt, "d", "new"), []byte("never synced"), false)
	writeFile(t, filepath.Join(mnt, "d", "old"), []byte("synced"), true)
	require.NoError(t, os.Rename(filepath.Join(mnt, "d", "old"), filepath.Join(mnt, "d", "renamed")))
	writeFile(t, filepath.Join(mnt, "gone"), []byte("x"), true)
	require.NoError(t, os.Remove(filepath.Join(mnt, "gone")))

	require.NoError(t, m.PowerLoss())
	got, err := os.ReadFile(filepath.Join(backing, "d", "new"))
	require.NoError(t, err)
	assert.Empty(t, got, "a created file survives, without its unsynced bytes")
	got, err = os.ReadFile(filepath.Join(backing, "d", "renamed"))
	require.NoError(t, err)
	assert.Equal(t, "synced", string(got), "a rename survives, with its synced bytes")
	assert.NoFileExists(t, filepath.Join(backing, "gone"))
}

func TestEveryOperationFailsAfterPowerLoss(t *testing.T) {
	_, mnt, m := mount(t, powerfs.Options{})
	path := filepath.Join(mnt, "f")
	writeFile(t, path, []byte("synced"), true)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()

	require.NoError(t, m.PowerLoss())
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost is not closed after PowerLoss")
	}
	_, err = f.WriteAt([]byte("x"), 0)
	assert.ErrorIs(t, err, syscall.EIO, "write")
	assert.ErrorIs(t, f.Sync(), syscall.EIO, "fsync")
	_, err = f.ReadAt(make([]byte, 1), 0)
	assert.ErrorIs(t, err, syscall.EIO, "read")
	_, err = os.Create(filepath.Join(mnt, "g"))
	assert.ErrorIs(t, err, syscall.EIO, "create")
	assert.ErrorIs(t, os.Mkdir(filepath.Join(mnt, "d"), 0o755), syscall.EIO, "mkdir")
}

func TestCrashAtOpCutsThePowerBeforeThatOperation(t *testing.T) {
	// Operations that change the disk: 1 create, 2 write, 3 fsync, 4 write.
	backing, mnt, m := mount(t, powerfs.Options{CrashAtOp: 4})
	f, err := os.Create(filepath.Join(mnt, "f"))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("first"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.WriteAt([]byte("second"), 5)
	assert.ErrorIs(t, err, syscall.EIO, "the fourth operation meets the power loss")
	assert.Equal(t, 4, m.Ops())
	got, err := os.ReadFile(filepath.Join(backing, "f"))
	require.NoError(t, err)
	assert.Equal(t, "first", string(got))
}

func TestKeepKeepsThePrefixOfUnsyncedWrites(t *testing.T) {
	for _, tc := range []struct {
		keep int
		want string
	}{
		{keep: 0, want: "s"},
		{keep: 50, want: "sab"},
		{keep: 100, want: "sabcd"},
	} {
		t.Run(fmt.Sprintf("keep%d", tc.keep), func(t *testing.T) {
			backing, mnt, m := mount(t, powerfs.Options{Keep: tc.keep})
			f, err := os.Create(filepath.Join(mnt, "f"))
			require.NoError(t, err)
			defer f.Close()
			_, err = f.Write([]byte("s"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			for _, b := range []string{"a", "b", "c", "d"} {
				_, err = f.Write([]byte(b))
				require.NoError(t, err)
			}
			require.NoError(t, m.PowerLoss())
			got, err := os.ReadFile(filepath.Join(backing, "f"))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got), "keep %d%%", tc.keep)
		})
	}
}

func TestIgnoreFsyncLosesSyncedWrites(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{IgnoreFsync: true})
	writeFile(t, filepath.Join(mnt, "f"), []byte("synced, they said"), true)
	require.NoError(t, m.PowerLoss())
	got, err := os.ReadFile(filepath.Join(backing, "f"))
	require.NoError(t, err)
	assert.Empty(t, got, "a lying disk keeps nothing it was told to sync")
}
