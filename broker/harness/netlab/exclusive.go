//go:build unix

package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Exclusive takes the machine-wide lock of the tests that use real hosts
// and the machine's network (a Lab; a container cluster on the host's
// network), so that two of them, in two test binaries that `go test ./...`
// runs side by side, never disturb one another; release gives it back. It
// waits for a holder to finish.
func Exclusive() (release func(), err error) {
	path := filepath.Join(os.TempDir(), "minikafka-hosts.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("netlab: lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
