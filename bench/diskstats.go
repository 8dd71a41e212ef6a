package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SectorBytes is the unit of the kernel's block-device counters: always 512
// bytes, whatever the device's real sector size.
const SectorBytes = 512

// ErrNoDevice: the directory is not on a block device whose counters can be
// read (tmpfs, overlay, a network filesystem, or not Linux).
var ErrNoDevice = errors.New("bench: no block device counters for this directory")

// DiskStats are the cumulative I/O counters of one block device, from
// /sys/dev/block/<major>:<minor>/stat (the same numbers as /proc/diskstats).
// They count what reached the device, unlike /proc/self/io, which counts
// what a process handed to the page cache.
type DiskStats struct {
	ReadOps      int64 `json:"read_ops"`
	ReadBytes    int64 `json:"read_bytes"`
	WriteOps     int64 `json:"write_ops"`
	WrittenBytes int64 `json:"written_bytes"`
	FlushOps     int64 `json:"flush_ops"`
}

// Sub returns the counters accumulated between o and s (s taken later).
func (s DiskStats) Sub(o DiskStats) DiskStats {
	return DiskStats{
		ReadOps:      s.ReadOps - o.ReadOps,
		ReadBytes:    s.ReadBytes - o.ReadBytes,
		WriteOps:     s.WriteOps - o.WriteOps,
		WrittenBytes: s.WrittenBytes - o.WrittenBytes,
		FlushOps:     s.FlushOps - o.FlushOps,
	}
}

// ParseDiskStat reads the contents of a block device's stat file: reads
// completed, reads merged, sectors read, ms reading, writes completed, writes
// merged, sectors written, ms writing, in flight, ms doing I/O, weighted ms,
// then (newer kernels) the discard and flush fields.
func ParseDiskStat(line string) (DiskStats, error) {
	f := strings.Fields(line)
	if len(f) < 11 {
		return DiskStats{}, fmt.Errorf("bench: disk stat has %d fields, want at least 11: %q", len(f), line)
	}
	num := func(i int) (int64, error) {
		if i >= len(f) {
			return 0, nil
		}
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: disk stat field %d: %w", i, err)
		}
		return v, nil
	}
	var s DiskStats
	var err error
	for _, fld := range []struct {
		i   int
		dst *int64
		mul int64
	}{{0, &s.ReadOps, 1}, {2, &s.ReadBytes, SectorBytes}, {4, &s.WriteOps, 1}, {6, &s.WrittenBytes, SectorBytes}, {15, &s.FlushOps, 1}} {
		var v int64
		if v, err = num(fld.i); err != nil {
			return DiskStats{}, err
		}
		*fld.dst = v * fld.mul
	}
	return s, nil
}

// Disk reads the counters of the block device that holds a directory.
type Disk struct {
	// Name is the kernel's name for the device (vda, nvme0n1p2).
	Name     string
	statPath string
}

// DiskFor finds the block device holding dir. It returns ErrNoDevice when
// there is none whose counters can be read.
func DiskFor(dir string) (*Disk, error) {
	major, minor, err := deviceOf(dir)
	if err != nil {
		return nil, err
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	stat := sys + "/stat"
	if _, err := os.Stat(stat); err != nil {
		return nil, fmt.Errorf("%w: %s on device %d:%d: %v", ErrNoDevice, dir, major, minor, err)
	}
	name, _, _ := sysBlockNames(sys)
	return &Disk{Name: name, statPath: stat}, nil
}

// Stats reads the device's counters now.
func (d *Disk) Stats() (DiskStats, error) {
	b, err := os.ReadFile(d.statPath)
	if err != nil {
		return DiskStats{}, fmt.Errorf("bench: read %s: %w", d.statPath, err)
	}
	return ParseDiskStat(string(b))
}
