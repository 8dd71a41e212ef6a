package powerfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fileID names a backing file across renames and links: its inode number
// and birth time, so that a journal never outlives its file onto another
// that reuses the inode number.
type fileID struct {
	dev, ino uint64
	btimeNs  int64
}

func idOf(fd int) (fileID, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return fileID{}, err
	}
	return fileID{
		dev:     unix.Mkdev(st.Dev_major, st.Dev_minor),
		ino:     st.Ino,
		btimeNs: st.Btime.Sec*1e9 + int64(st.Btime.Nsec),
	}, nil
}

// undo is what one unsynced change to a file replaced: the file's size
// before it and the bytes it overwrote at off (zeros of length zeroLen when
// they were all zero, the common case of a preallocated file).
type undo struct {
	off     int64
	old     []byte
	zeroLen int
	size    int64
}

// journal is a file's unsynced changes, oldest first. Undoing them newest
// first brings the file back to its state at its last fsync.
type journal []undo

// recordWrite is the undo record of writing n bytes at off to fd.
func recordWrite(fd int, off int64, n int) (undo, error) {
	size, err := sizeOf(fd)
	if err != nil {
		return undo{}, err
	}
	u := undo{off: off, size: size}
	if end := min(off+int64(n), size); end > off {
		old := make([]byte, end-off)
		if _, err := unix.Pread(fd, old, off); err != nil {
			return undo{}, err
		}
		if isZero(old) {
			u.zeroLen = len(old)
		} else {
			u.old = old
		}
	}
	return u, nil
}

// recordTruncate is the undo record of setting fd's size to size.
func recordTruncate(fd int, size int64) (undo, error) {
	cur, err := sizeOf(fd)
	if err != nil {
		return undo{}, err
	}
	if size >= cur {
		return undo{size: cur}, nil
	}
	return recordWrite(fd, size, int(cur-size))
}

func sizeOf(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

func isZero(b []byte) bool {
	return len(bytes.Trim(b, "\x00")) == 0
}

// apply undoes u on fd.
func (u undo) apply(fd int) error {
	if err := unix.Ftruncate(fd, u.size); err != nil {
		return err
	}
	old := u.old
	if u.zeroLen > 0 {
		old = make([]byte, u.zeroLen)
	}
	if len(old) > 0 {
		if _, err := unix.Pwrite(fd, old, u.off); err != nil {
			return err
		}
	}
	return nil
}

// rollback undoes, in every regular file under root, the unsynced changes
// the journals hold past a kept prefix: keep(n) says how many of a file's n
// unsynced changes (the oldest) reached the platter. Files no longer under
// root were unlinked, which is durable at once: nothing to undo.
func rollback(root string, journals map[fileID]journal, keep func(n int) int) error {
	done := make(map[fileID]bool, len(journals))
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fd := int(f.Fd())
		id, err := idOf(fd)
		if err != nil {
			return err
		}
		j, ok := journals[id]
		if !ok || done[id] {
			return nil
		}
		done[id] = true
		for i := len(j) - 1; i >= keep(len(j)); i-- {
			if err := j[i].apply(fd); err != nil {
				return fmt.Errorf("roll back %s: %w", path, err)
			}
		}
		return nil
	})
}

// keepShare keeps the given percentage of each file's unsynced changes
// (rounded down), or, for share < 0, a prefix of random length drawn from
// rng.
func keepShare(share int, rng *rand.Rand) func(n int) int {
	return func(n int) int {
		if share < 0 {
			return rng.IntN(n + 1)
		}
		return n * share / 100
	}
}

// nameUndo is a change to the namespace (a name created, or moved onto a
// free name) that is durable only once every directory in dirs has been
// fsynced after it.
type nameUndo struct {
	dirs map[fileID]bool
	undo func(backing string) error
}

func idOfPath(path string) (fileID, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return fileID{}, err
	}
	return fileID{
		dev:     unix.Mkdev(st.Dev_major, st.Dev_minor),
		ino:     st.Ino,
		btimeNs: st.Btime.Sec*1e9 + int64(st.Btime.Nsec),
	}, nil
}

// undoCreate removes what was created at rel (a whole tree, for a
// directory: nothing in it was reachable). Already gone is fine: an unlink
// after it was durable at once.
func undoCreate(rel string) func(string) error {
	return func(backing string) error {
		return os.RemoveAll(filepath.Join(backing, rel))
	}
}

// undoRename moves what was renamed from rel to newRel back.
func undoRename(rel, newRel string) func(string) error {
	return func(backing string) error {
		err := os.Rename(filepath.Join(backing, newRel), filepath.Join(backing, rel))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
}

// unname undoes, newest first, the changes to the namespace that no
// directory fsync made durable.
func unname(backing string, names []nameUndo) error {
	for i := len(names) - 1; i >= 0; i-- {
		if err := names[i].undo(backing); err != nil {
			return err
		}
	}
	return nil
}
