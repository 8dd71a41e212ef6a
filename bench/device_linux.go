package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

func deviceOf(dir string) (major, minor uint32, err error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("bench: stat %s: %w", dir, err)
	}
	major, minor = unix.Major(st.Dev), unix.Minor(st.Dev)
	if major == 0 {
		// Anonymous devices: tmpfs, overlay, btrfs subvolumes, FUSE.
		return 0, 0, fmt.Errorf("%w: %s is on anonymous device 0:%d", ErrNoDevice, dir, minor)
	}
	return major, minor, nil
}

// sysBlockNames resolves /sys/dev/block/M:m to the device's name and, for a
// partition, its disk's name and sysfs directory.
func sysBlockNames(sys string) (device, disk, diskDir string) {
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "", "", ""
	}
	device, disk, diskDir = filepath.Base(real), filepath.Base(real), real
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		diskDir = filepath.Dir(real)
		disk = filepath.Base(diskDir)
	}
	return device, disk, diskDir
}

func diskInfo(dir string) DiskInfo {
	major, minor, err := deviceOf(dir)
	if err != nil {
		return DiskInfo{}
	}
	device, disk, diskDir := sysBlockNames(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if diskDir == "" {
		return DiskInfo{}
	}
	info := DiskInfo{
		Device:     device,
		Disk:       disk,
		Rotational: readTrim(filepath.Join(diskDir, "queue", "rotational")),
		Scheduler:  readTrim(filepath.Join(diskDir, "queue", "scheduler")),
	}
	info.Vendor = readTrim(filepath.Join(diskDir, "device", "vendor"))
	info.Model = readTrim(filepath.Join(diskDir, "device", "model"))
	if drv, err := filepath.EvalSymlinks(filepath.Join(diskDir, "device", "driver")); err == nil {
		info.Driver = filepath.Base(drv)
	}
	if sectors, err := strconv.ParseInt(readTrim(filepath.Join(diskDir, "size")), 10, 64); err == nil {
		info.SizeBytes = sectors * SectorBytes
	}
	return info
}
