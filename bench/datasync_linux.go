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

// Preallocate reserves n bytes of f from off, extending its size, so that
// later writes there change no file size and fdatasync has no size to
// journal. Filesystems that cannot preallocate leave f as it was.
func Preallocate(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS {
		return nil
	}
	return err
}
