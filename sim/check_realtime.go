package sim

import "slices"

// realtimeOrder looks for realtime-order: two acks=all writes to one
// partition whose offsets contradict real time. A write first sent after
// another was acknowledged must land after it; landing before it means the
// log was rewritten under an acknowledged record, or offsets were handed
// out twice.
type realtimeOrder struct {
	acks map[tp][]ackAt // in acknowledgement order
}

type ackAt struct {
	tick int64 // when it was acknowledged
	last int64 // its last offset
	by   string
}

func (o *realtimeOrder) init() { o.acks = map[tp][]ackAt{} }

// forget drops the acknowledgements of k at or above offset from: lost
// with every copy unsynced (sync=interval or never).
func (o *realtimeOrder) forget(k tp, from int64) {
	o.acks[k] = slices.DeleteFunc(o.acks[k], func(a ackAt) bool { return a.last >= from })
}

// acked is a write by, first sent at tick sent, acknowledged now at
// offsets [base, last].
func (o *realtimeOrder) acked(s *Sim, k tp, sent, now, base, last int64, by string) {
	for _, a := range o.acks[k] {
		if a.tick < sent && a.last >= base {
			s.violate("realtime-order", "%s's write to %s, first sent at %dms, was acknowledged at offset %d, at or below offset %d of %s's write acknowledged at %dms",
				by, k, sent, base, a.last, a.by, a.tick)
			return
		}
	}
	o.acks[k] = append(o.acks[k], ackAt{tick: now, last: last, by: by})
}
