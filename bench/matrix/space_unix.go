//go:build unix

package matrix

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/minikafka/minikafka/bench"
)

// checkSpace refuses to start a cell on a filesystem that is (nearly) full.
func checkSpace(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) // Bsize is uint32 on darwin
	if free < minFreeBytes {
		return fmt.Errorf("disk full: %s has %s free, a cell needs at least %s", dir, bench.Bytes(free), bench.Bytes(minFreeBytes))
	}
	return nil
}
