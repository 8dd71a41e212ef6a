package faults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// disks are a filesystem of its own per broker: a tmpfs of a fixed size
// mounted on each node's data directory (node-1, ... under dir, as
// broker/harness's Cluster lays them out), so that one broker's disk can be
// filled without touching the machine's. It needs root.
type disks struct {
	dirs []string
}

func mountDisks(dir string, n int, size int64) (*disks, error) {
	d := &disks{}
	for i := 1; i <= n; i++ {
		nd := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			d.unmount()
			return nil, err
		}
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", nd).CombinedOutput()
		if err != nil {
			d.unmount()
			return nil, fmt.Errorf("faults: mount a tmpfs on %s: %v: %s", nd, err, strings.TrimSpace(string(out)))
		}
		d.dirs = append(d.dirs, nd)
	}
	return d, nil
}

func (d *disks) filler(i int) string { return filepath.Join(d.dirs[i-1], "filler") }

// fill writes node i's filesystem full: a file grown until the write that
// finds no space left.
func (d *disks) fill(i int) error {
	f, err := os.Create(d.filler(i))
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("faults: fill %s: %w", d.filler(i), err)
		}
	}
}

// free removes what fill wrote.
func (d *disks) free(i int) error { return os.Remove(d.filler(i)) }

func (d *disks) unmount() {
	for _, nd := range d.dirs {
		_ = exec.Command("umount", "-l", nd).Run()
	}
}
