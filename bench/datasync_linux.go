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
