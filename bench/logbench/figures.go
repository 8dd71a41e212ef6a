package logbench

import (
	"math"
	"strings"
)

// Failure implements bench.Rep.
func (s Sample) Failure() string { return s.Err }

// Figures are the sample's figures by bench/result's names (the unit in
// the name); one the sample lacks is absent, and a failed sample has
// none. WA and SA are device bytes written, and bytes allocated after
// close, per payload byte; cold is 1 when a read came from the device
// (see evict), 0 when it came warm.
func (s Sample) Figures() map[string]float64 {
	f := map[string]float64{}
	if s.Err != "" {
		return f
	}
	put := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			f[name] = v
		}
	}
	payload := float64(s.PayloadBytes)
	put("records_per_s", float64(s.Records)/s.Seconds)
	put("mb_per_s", payload/s.Seconds/1e6)
	put("time_s", s.Seconds)
	put("freed_bytes", float64(s.Freed))
	if l := s.Latency; l != nil {
		put("p50_s", l.P50.Seconds())
		put("p99_s", l.P99.Seconds())
	}
	if d := s.Device; d != nil {
		put("device_wa", float64(d.WrittenBytes)/payload)
		put("device_written_bytes", float64(d.WrittenBytes))
		put("device_read_bytes", float64(d.ReadBytes))
	}
	if u := s.Usage; u != nil {
		put("space_amp", float64(u.Allocated)/payload)
		put("disk_bytes", float64(u.Allocated))
		put("apparent_bytes", float64(u.Apparent))
	}
	if strings.HasPrefix(s.Cache, "cold") {
		f["cold"] = 1
	} else if strings.HasPrefix(s.Cache, "warm") {
		f["cold"] = 0
	}
	return f
}
