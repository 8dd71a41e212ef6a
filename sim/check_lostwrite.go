package sim

import (
	"fmt"
	"slices"
)

// lostWrites looks for lost-write: a record acknowledged with acks=all at
// offset o that is not at o, with the same value, on a replica that becomes
// leader of the acknowledging leader's epoch or a later one (checked at
// every election and at the end of the run, on every leader). A replica
// whose stale metadata makes it the leader of an older epoch need not have
// it: the record was committed after that epoch had ended (a broker
// partitioned from the quorum may apply an election long after newer ones
// were made). Records of deleted topics are forgotten.
type lostWrites struct {
	batches map[tp][]ackedBatch
}

type ackedBatch struct {
	base   int64
	epoch  int32 // the acknowledging leader's
	values [][]byte
	by     string
}

func (l *lostWrites) init() { l.batches = map[tp][]ackedBatch{} }

func (l *lostWrites) acked(p *producerClient, k tp, base int64, epoch int32, values [][]byte) {
	if p.acks != -1 {
		return
	}
	l.batches[k] = append(l.batches[k], ackedBatch{base: base, epoch: epoch, values: values, by: fmt.Sprintf("producer %d", p.id)})
}

func (l *lostWrites) elected(s *Sim, r view) {
	epoch := r.epoch
	for _, a := range l.batches[r.tp] {
		if a.epoch > epoch {
			continue
		}
		for i, v := range a.values {
			off := a.base + int64(i)
			got, ok := valueAt(s, r, off)
			if !ok || !slices.Equal(got, v) {
				s.violate("lost-write", "%s acknowledged %q at %s offset %d (acks=all); broker %d leads epoch %d with %q there (log [%d, %d))",
					a.by, v, r.tp, off, r.broker, epoch, got, r.log.StartOffset(), r.log.EndOffset())
				return
			}
		}
	}
}

// valueAt is the value of the record at off in r's log.
func valueAt(s *Sim, r view, off int64) ([]byte, bool) {
	if off < r.log.StartOffset() || off >= r.log.EndOffset() {
		return nil, false
	}
	bs, err := r.log.ReadLog(off, 1)
	if err != nil || len(bs) == 0 {
		return nil, false
	}
	for _, rec := range decode(s, [][]byte{bs[0].Data}) {
		if rec.Offset == off {
			return rec.Value, true
		}
	}
	return nil, false
}
