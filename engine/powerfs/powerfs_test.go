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
		syncDir(t, filepath.Dir(path))
	}
	require.NoError(t, f.Close())
}

// syncDir fsyncs the directory dir.
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
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

func TestNamesAreDurableAtTheirDirectorysFsync(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{})
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "d"), 0o755))
	syncDir(t, mnt)
	writeFile(t, filepath.Join(mnt, "d", "old"), []byte("synced"), true) // and d synced
	writeFile(t, filepath.Join(mnt, "d", "kept"), []byte("never synced"), false)
	syncDir(t, filepath.Join(mnt, "d"))
	// Durable at once.
	writeFile(t, filepath.Join(mnt, "gone"), []byte("x"), true)
	require.NoError(t, os.Remove(filepath.Join(mnt, "gone")))

	// Not made durable by any directory fsync: all undone.
	f, err := os.Create(filepath.Join(mnt, "d", "new"))
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "a file's own fsync does not make its name durable")
	require.NoError(t, f.Close())
	require.NoError(t, os.Rename(filepath.Join(mnt, "d", "old"), filepath.Join(mnt, "d", "renamed")))
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, "e", "sub"), 0o755))
	syncDir(t, filepath.Join(mnt, "e"))

	require.NoError(t, m.PowerLoss())
	got, err := os.ReadFile(filepath.Join(backing, "d", "kept"))
	require.NoError(t, err)
	assert.Empty(t, got, "a name synced by its directory survives, without its unsynced bytes")
	assert.NoFileExists(t, filepath.Join(backing, "d", "new"), "a name its directory never synced")
	got, err = os.ReadFile(filepath.Join(backing, "d", "old"))
	require.NoError(t, err)
	assert.Equal(t, "synced", string(got), "a rename no directory fsync made durable is undone")
	assert.NoFileExists(t, filepath.Join(backing, "d", "renamed"))
	assert.NoDirExists(t, filepath.Join(backing, "e"), "a directory whose parent was not synced goes, with what was in it")
	assert.NoFileExists(t, filepath.Join(backing, "gone"), "an unlink is durable at once")
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
	// Operations that change the disk: 1 create, 2 write, 3 fsync, 4 fsync
	// of the directory, 5 write.
	backing, mnt, m := mount(t, powerfs.Options{CrashAtOp: 5})
	f, err := os.Create(filepath.Join(mnt, "f"))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("first"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	syncDir(t, mnt)
	_, err = f.WriteAt([]byte("second"), 5)
	assert.ErrorIs(t, err, syscall.EIO, "the fifth operation meets the power loss")
	assert.Equal(t, 5, m.Ops())
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
			syncDir(t, mnt)
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
	assert.NoFileExists(t, filepath.Join(backing, "f"), "a lying disk keeps nothing it was told to sync, names included")
}

func TestJournaledNamesAreDurableAtAnyFsync(t *testing.T) {
	backing, mnt, m := mount(t, powerfs.Options{JournaledNames: true})
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "d"), 0o755))
	writeFile(t, filepath.Join(mnt, "d", "early"), []byte("x"), false)
	f, err := os.Create(filepath.Join(mnt, "synced"))
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "commits the journal: every name made so far")
	require.NoError(t, f.Close())
	writeFile(t, filepath.Join(mnt, "d", "late"), []byte("x"), false)

	require.NoError(t, m.PowerLoss())
	assert.FileExists(t, filepath.Join(backing, "synced"))
	assert.FileExists(t, filepath.Join(backing, "d", "early"), "made before an fsync of another file")
	assert.NoFileExists(t, filepath.Join(backing, "d", "late"), "made after the last fsync")
}
