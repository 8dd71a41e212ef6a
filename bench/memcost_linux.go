package bench

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// memCostBytes is how much each memory measurement maps and writes.
const memCostBytes = 64 << 20

// memoryCosts measures what a store pays to write fresh memory on this
// machine: the first write to each page of a new anonymous mapping (the
// page faults an allocator's fresh arena or a new memtable takes), and
// writing a new file in dir through a shared mapping against writing it
// with pwrite (what an engine that writes through mmap, such as Badger's
// value log, pays against one that writes with system calls). On a
// virtual machine whose hypervisor shadows page tables a first touch can
// cost a hundred times what it costs on bare metal, and the mapped writes
// fall far behind pwrite; the reports carry the figures so that a reader
// can tell. Zero values mean a measurement could not run.
func memoryCosts(dir string) MemoryCosts {
	var mc MemoryCosts
	if b, err := unix.Mmap(-1, 0, memCostBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE); err == nil {
		start := time.Now()
		for i := 0; i < len(b); i += pageBytes {
			b[i] = 1
		}
		mc.FirstTouchNs = float64(time.Since(start).Nanoseconds()) / float64(len(b)/pageBytes)
		_ = unix.Munmap(b)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	mc.MmapWriteMBps = rate(func(f *os.File) error {
		if err := f.Truncate(memCostBytes); err != nil {
			return err
		}
		b, err := unix.Mmap(int(f.Fd()), 0, memCostBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		for off := 0; off < len(b); off += len(chunk) {
			copy(b[off:], chunk)
		}
		return unix.Munmap(b)
	}, dir)
	mc.PwriteMBps = rate(func(f *os.File) error {
		for off := int64(0); off < memCostBytes; off += int64(len(chunk)) {
			if _, err := f.WriteAt(chunk, off); err != nil {
				return err
			}
		}
		return nil
	}, dir)
	return mc
}

const pageBytes = 4096

// rate times write on a new file in dir and returns MB/s (0 on an error).
// The file is removed after; nothing is synced: both ways leave the data
// in the page cache.
func rate(write func(*os.File) error, dir string) float64 {
	f, err := os.CreateTemp(dir, ".memcost-*")
	if err != nil {
		return 0
	}
	defer os.Remove(filepath.Clean(f.Name()))
	defer f.Close()
	start := time.Now()
	if err := write(f); err != nil {
		return 0
	}
	return float64(memCostBytes) / 1e6 / time.Since(start).Seconds()
}
