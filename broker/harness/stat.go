package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// PeakRSS returns the peak resident set size (VmHWM) of process pid in
// bytes.
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("peak rss of %d: %w", pid, err)
	}
	defer f.Close()
	return parseVmHWM(f)
}

func parseVmHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("peak rss: unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak rss: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	return 0, errors.New("peak rss: no VmHWM line")
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture (the kernel converts to it whatever its
// own tick rate).
const clockTicks = 100

// CPU returns the user plus system CPU time, in seconds, that process pid
// and its reaped children have used.
func CPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted from the last ')'.
func parseStatCPU(line string) (float64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name in %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: cpu field %q: %w", s, err)
		}
		ticks += v
	}
	return float64(ticks) / clockTicks, nil
}

// IO is the storage I/O a process caused, from /proc/<pid>/io.
type IO struct {
	// ReadBytes and WriteBytes are what the process caused to be read from
	// and written to storage: a write counts when it dirties the page
	// cache, whichever thread later writes it back.
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
	// CancelledWriteBytes are dirtied bytes that never reached storage
	// (the file was truncated or removed first).
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"`
}

// ReadIO reads /proc/<pid>/io (readable for our own children).
func ReadIO(pid int) (IO, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return IO{}, fmt.Errorf("io of %d: %w", pid, err)
	}
	defer f.Close()
	return parseIO(f)
}

func parseIO(r io.Reader) (IO, error) {
	var p IO
	fields := map[string]*int64{
		"read_bytes":            &p.ReadBytes,
		"write_bytes":           &p.WriteBytes,
		"cancelled_write_bytes": &p.CancelledWriteBytes,
	}
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[strings.TrimSpace(k)]
		if !ok || !want {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return IO{}, fmt.Errorf("io: %s: %w", k, err)
		}
		*dst = n
		seen++
	}
	if err := sc.Err(); err != nil {
		return IO{}, fmt.Errorf("io: %w", err)
	}
	if seen != len(fields) {
		return IO{}, fmt.Errorf("io: found %d of the %d byte counters (task I/O accounting off?)", seen, len(fields))
	}
	return p, nil
}

// Written is the bytes that reached (or will reach) storage between o and
// p: writes less the cancelled ones.
func (p IO) Written(o IO) int64 {
	return (p.WriteBytes - o.WriteBytes) - (p.CancelledWriteBytes - o.CancelledWriteBytes)
}
