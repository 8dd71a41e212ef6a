package sim

// highWatermarks checks that a replica's high watermark never goes back
// within its incarnation (not by a truncation either: nothing below it may
// be dropped), and that nobody is served a record at or above the leader's
// high watermark.
type highWatermarks struct{}

func (h *highWatermarks) init() {}

func (h *highWatermarks) advanced(s *Sim, r *replica, from, to int64) {
	if to < from {
		s.violate("hw-regression", "broker %d %s: HW from %d to %d", r.b.id, r.tp, from, to)
	}
}

// lowered: a truncation took the high watermark back (the partition
// lowers it with the log, which under sync=always means it had
// acknowledged what the cluster did not keep).
func (h *highWatermarks) lowered(s *Sim, r *replica, from, to int64) {
	s.violate("hw-regression", "broker %d %s: truncated to %d, below its HW %d", r.b.id, r.tp, to, from)
}

func (h *highWatermarks) served(s *Sim, r *replica, offset int64, resp consumeResp) {
	for _, b := range resp.batches {
		if end := info(b).NextOffset(); end > resp.hw {
			s.violate("read-above-hw", "broker %d %s: served a batch ending at %d, HW %d", r.b.id, r.tp, end, resp.hw)
			return
		}
	}
}
