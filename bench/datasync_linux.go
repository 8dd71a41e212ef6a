package bench

import (
	"os"

	"golang.org/x/sys/unix"
)

// Datasync flushes f's data, and the metadata needed to read it back, to the
// device: fdatasync(2), what a log needs after an append.
func Datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// SyncFS commits the filesystem holding dir: syncfs(2), which waits for its
// journal and, on a disk mounted with discard, for the discards of what
// was deleted.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
