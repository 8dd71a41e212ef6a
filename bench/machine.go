package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// MachineInfo describes where a benchmark ran: enough for a reader to judge
// whether two reports are comparable. Fields that cannot be read are left
// empty rather than guessed.
type MachineInfo struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	MemoryBytes int64  `json:"memory_bytes"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	GoVersion   string `json:"go_version"`
	// LoadAvg is /proc/loadavg when Machine was called: a busy machine shows.
	LoadAvg string `json:"loadavg"`

	// Dir is the data directory the rest describes.
	Dir          string   `json:"dir"`
	Filesystem   string   `json:"filesystem"`
	MountPoint   string   `json:"mount_point"`
	MountSource  string   `json:"mount_source"`
	MountOptions string   `json:"mount_options"`
	Disk         DiskInfo `json:"disk"`
	// Memory is what writing fresh memory costs here (memoryCosts).
	Memory MemoryCosts `json:"memory"`
}

// MemoryCosts are measured when a run begins (see memoryCosts).
type MemoryCosts struct {
	// FirstTouchNs is the first write to a page of a new anonymous
	// mapping, per 4 KiB page.
	FirstTouchNs float64 `json:"first_touch_ns"`
	// MmapWriteMBps and PwriteMBps write a new 64 MiB file in the data
	// directory, through a shared mapping and with pwrite.
	MmapWriteMBps float64 `json:"mmap_write_mb_s"`
	PwriteMBps    float64 `json:"pwrite_mb_s"`
}

// DiskInfo describes the block device that holds a directory.
type DiskInfo struct {
	// Device is the kernel name of what holds the directory (vda, nvme0n1p2).
	Device string `json:"device"`
	// Disk is the whole disk when Device is a partition, else Device.
	Disk   string `json:"disk"`
	Vendor string `json:"vendor"`
	Model  string `json:"model"`
	// Driver is the kernel driver of the disk (nvme, virtio_blk, sd).
	Driver    string `json:"driver"`
	SizeBytes int64  `json:"size_bytes"`
	// Rotational is the kernel's rotational flag as it reads it ("0" or
	// "1"); virtual disks often claim 1 whatever backs them.
	Rotational string `json:"rotational"`
	Scheduler  string `json:"scheduler"`
}

// Machine describes this machine and the filesystem and disk holding dir.
func Machine(dir string) MachineInfo {
	m := MachineInfo{
		CPUs:      runtime.NumCPU(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		GoVersion: runtime.Version(),
		CPUModel:  cpuModel(),
		Kernel:    readTrim("/proc/sys/kernel/osrelease"),
		LoadAvg:   readTrim("/proc/loadavg"),
	}
	m.MemoryBytes = memTotal()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	m.Dir = dir
	m.MountPoint, m.Filesystem, m.MountSource, m.MountOptions = mountOf(dir)
	m.Disk = diskInfo(dir)
	m.Memory = memoryCosts(dir)
	return m
}

// GitCommit returns `git rev-parse HEAD` run in dir, with " (dirty)" when the
// work tree has uncommitted changes, or "unknown" without git.
func GitCommit(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += " (dirty)"
	}
	return rev
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// mountOf finds, in /proc/self/mountinfo, the mount whose mount point is the
// longest prefix of dir.
func mountOf(dir string) (point, fstype, source, options string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", "", ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		mp, fs, src, opts, ok := parseMountInfo(line)
		if !ok || !underDir(dir, mp) || len(mp) < len(point) {
			continue
		}
		point, fstype, source, options = mp, fs, src, opts
	}
	return point, fstype, source, options
}

// parseMountInfo reads one line of /proc/self/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// fields 5 and 6 are the mount point and its options; after the "-" come the
// filesystem type, the source and the superblock options.
func parseMountInfo(line string) (point, fstype, source, options string, ok bool) {
	f := strings.Fields(line)
	sep := -1
	for i, x := range f {
		if x == "-" {
			sep = i
			break
		}
	}
	if len(f) < 6 || sep < 6 || sep+2 >= len(f) {
		return "", "", "", "", false
	}
	options = f[5]
	if sep+3 < len(f) {
		options += "; superblock " + f[sep+3]
	}
	return unescapeMount(f[4]), f[sep+1], f[sep+2], options, true
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func underDir(dir, mount string) bool {
	if mount == "/" {
		return strings.HasPrefix(dir, "/")
	}
	return dir == mount || strings.HasPrefix(dir, mount+"/")
}
