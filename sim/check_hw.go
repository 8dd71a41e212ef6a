package sim

import "fmt"

// highWatermarks checks that a replica's high watermark never goes back
// within its incarnation (not by a truncation either: nothing below it may
// be dropped), and that nobody is served a record at or above the leader's
// high watermark.
type highWatermarks struct {
	// lost is where each partition lost acknowledged batches with every
	// copy unsynced (sync=interval or never): its high watermark may go
	// back to there.
	lost map[tp]int64
}

func (h *highWatermarks) init() { h.lost = map[tp]int64{} }

func (h *highWatermarks) lostFrom(k tp, off int64) {
	if prev, ok := h.lost[k]; !ok || off < prev {
		h.lost[k] = off
	}
}

// observed is a replica's high watermark going from from to to, as seen
// after an event: lower is a regression (a truncation took it back, which
// under sync=always means it had acknowledged what the cluster did not
// keep).
func (h *highWatermarks) observed(s *Sim, replica fmt.Stringer, k tp, from, to int64) {
	if lost, ok := h.lost[k]; ok && to >= lost {
		return
	}
	if to < from {
		s.violate("hw-regression", "%s: high watermark from %d to %d", replica, from, to)
	}
}

func (h *highWatermarks) served(s *Sim, r view, offset int64, resp consumeResp) {
	for _, b := range resp.batches {
		if end := info(b).NextOffset(); end > resp.hw {
			s.violate("read-above-hw", "broker %d %s: served a batch ending at %d, HW %d", r.broker, r.tp, end, resp.hw)
			return
		}
	}
}
