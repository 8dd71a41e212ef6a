package segment

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// willNeed asks the kernel to start reading f's bytes [off, off+n) into the
// page cache and returns at once. It reports false, and does nothing, when f
// is not backed by a file descriptor (an in-memory FS).
func willNeed(f vfs.File, off, n int64) (bool, error) {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return false, nil
	}
	if err := unix.Fadvise(int(fd), off, n, unix.FADV_WILLNEED); err != nil {
		return true, fmt.Errorf("fadvise WILLNEED %d bytes at %d: %w", n, off, err)
	}
	return true, nil
}

// startWriteback asks the kernel to start writing f's dirty bytes
// [off, off+n) to the disk and returns without waiting for them
// (sync_file_range WRITE), so that the next fdatasync finds little left to
// write. It does nothing when f is not backed by a file descriptor.
func startWriteback(f vfs.File, off, n int64) error {
	fd := f.Fd()
	if fd == vfs.InvalidFd || n <= 0 {
		return nil
	}
	if err := unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		return fmt.Errorf("sync_file_range %d bytes at %d: %w", n, off, err)
	}
	return nil
}
