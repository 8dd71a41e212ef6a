package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Facts are where, when and how a run happened, for every profile: enough
// for a reader to judge whether two runs compare, and the numbers report
// text depends on (the CPU count, the load).
type Facts struct {
	Started  time.Time   `json:"started"`
	Duration float64     `json:"duration_s"`
	Machine  MachineInfo `json:"machine"`
	// LoadAfter is /proc/loadavg when the run ended (Machine.LoadAvg is
	// when it started).
	LoadAfter string `json:"loadavg_after"`
	Commit    string `json:"commit"`
	Command   string `json:"command"`
	// Setup says how the servers were started and driven, a line each.
	Setup []string `json:"setup"`
}

// Begin records the start of a run whose data goes under dir.
func Begin(dir, command string) Facts {
	return Facts{Started: time.Now(), Machine: Machine(dir), Commit: GitCommit("."), Command: command}
}

// End records the end of the run.
func (f *Facts) End() {
	f.Duration = time.Since(f.Started).Seconds()
	f.LoadAfter = readTrim("/proc/loadavg")
}

// Took is how long the run took.
func (f Facts) Took() time.Duration { return time.Duration(f.Duration * float64(time.Second)) }

// Load is the higher 1-minute load average of the run's start and end.
func (f Facts) Load() float64 { return max(loadOf(f.Machine.LoadAvg), loadOf(f.LoadAfter)) }

// loadOf reads the 1-minute load from a /proc/loadavg line (0 without one).
func loadOf(loadavg string) float64 {
	fields := strings.Fields(loadavg)
	if len(fields) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// Busy warns when the 1-minute load average exceeded the CPU count at the
// start or the end of the run: other work shared the machine. "" when it
// did not.
func (f Facts) Busy() string {
	worst, cpus := f.Load(), f.Machine.CPUs
	if cpus <= 0 || worst <= float64(cpus) {
		return ""
	}
	return fmt.Sprintf("The machine was busy (1-minute load average up to %.1f on %d CPUs): absolute figures are noisy; compare targets within this run, and read the [min–max] ranges.", worst, cpus)
}

// Cores is the CPU count in words for report text: "2 cores".
func (f Facts) Cores() string {
	if f.Machine.CPUs == 1 {
		return "1 core"
	}
	return fmt.Sprintf("%d cores", f.Machine.CPUs)
}

// List is the run's facts as report lines: date, commit, command, machine,
// load, data directory and disk, then the setup lines.
func (f Facts) List() []string {
	m := f.Machine
	d := m.Disk
	items := []string{
		fmt.Sprintf("date: %s; the run took %s", f.Started.UTC().Format(time.RFC3339), roundTook(f.Took())),
		"commit: " + f.Commit,
		"command: `" + f.Command + "`",
		fmt.Sprintf("machine: %d CPUs (%s), %s memory, kernel %s, %s/%s, %s", m.CPUs, orUnknown(m.CPUModel), Bytes(m.MemoryBytes),
			orUnknown(m.Kernel), m.OS, m.Arch, m.GoVersion),
		fmt.Sprintf("load average at the start: %s; at the end: %s", orUnknown(m.LoadAvg), orUnknown(f.LoadAfter)),
		fmt.Sprintf("data: %s on %s (%s, mounted at %s with %s)", m.Dir, orUnknown(m.Filesystem), orUnknown(m.MountSource), m.MountPoint, m.MountOptions),
		fmt.Sprintf("disk: %s (device %s), vendor %s, model %s, driver %s, %s, rotational flag %s, scheduler %s",
			orUnknown(d.Disk), orUnknown(d.Device), orUnknown(d.Vendor), orUnknown(d.Model), orUnknown(d.Driver),
			Bytes(d.SizeBytes), orUnknown(d.Rotational), orUnknown(d.Scheduler)),
	}
	if mc := m.Memory; mc.FirstTouchNs > 0 {
		items = append(items, fmt.Sprintf("memory costs, measured at the start: the first write to a fresh page %.1f µs; a new 64 MiB file "+
			"in the data directory written through a shared mapping at %.0f MB/s, with pwrite at %.0f MB/s",
			mc.FirstTouchNs/1000, mc.MmapWriteMBps, mc.PwriteMBps))
	}
	return append(items, f.Setup...)
}

// roundTook rounds a run's duration to what a reader needs: tenths of a
// second under a minute, seconds beyond.
func roundTook(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
