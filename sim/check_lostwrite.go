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
// were made). Records of deleted topics are forgotten, and those below a
// log start that retention or DeleteRecords moved.
//
// Under sync=interval or never an acknowledgement promises the record is
// in the memory of min.insync.replicas brokers, not on a disk: a batch
// every holder of which lost power before syncing it is lost as the
// README says it may be (excused), and the partition's history from its
// offset may be written again.
type lostWrites struct {
	batches map[tp][]*ackedBatch
}

type ackedBatch struct {
	base   int64
	epoch  int32 // the acknowledging leader's
	values [][]byte
	by     string
	// holders are the brokers whose log held the batch unsynced when it
	// was acknowledged and still may (non-durable runs only); kept: one
	// of them synced it, so it cannot be lost; excused: every holder lost
	// power before syncing it.
	holders         []int32
	kept, excused   bool
	ackTick, lostAt int64
}

func (l *lostWrites) init() {
	l.batches = map[tp][]*ackedBatch{}
}

// acked is an acks=all batch acknowledged; holders are the brokers whose
// log holds it, unsynced, now (nil under sync=always: it is on disks).
func (l *lostWrites) acked(s *Sim, by int32, k tp, base int64, epoch int32, values [][]byte, holders []int32) {
	l.batches[k] = append(l.batches[k], &ackedBatch{base: base, epoch: epoch, values: values, by: fmt.Sprintf("producer %d", by),
		holders: holders, kept: holders == nil, ackTick: s.now})
}

// powerLoss is broker b losing power: synced(k, base, end, first) says
// whether its log of k held the batch at base, up to end, synced. It returns the partitions whose
// batches were all lost this way, with the first such offset.
func (l *lostWrites) powerLoss(s *Sim, b int32, synced func(k tp, base, end int64, first []byte) bool) map[tp]int64 {
	lost := map[tp]int64{}
	for _, k := range sortedTPs(l.batches) {
		for _, a := range l.batches[k] {
			if a.kept || a.excused || !slices.Contains(a.holders, b) {
				continue
			}
			if synced(k, a.base, a.base+int64(len(a.values)), a.values[0]) {
				a.kept = true
				continue
			}
			a.holders = slices.DeleteFunc(a.holders, func(h int32) bool { return h == b })
			if len(a.holders) == 0 {
				a.excused, a.lostAt = true, s.now
				if off, ok := lost[k]; !ok || a.base < off {
					lost[k] = a.base
				}
			}
		}
	}
	return lost
}

// excuse is the batch at base of k lost with every copy unsynced before
// its acknowledgement arrived.
func (l *lostWrites) excuse(s *Sim, k tp, base int64) {
	for _, a := range l.batches[k] {
		if a.base == base && !a.kept {
			a.excused, a.lostAt = true, s.now
		}
	}
}

func (l *lostWrites) elected(s *Sim, r view) {
	epoch := r.epoch
	for _, a := range l.batches[r.tp] {
		if a.epoch > epoch || a.excused {
			continue
		}
		for i, v := range a.values {
			off := a.base + int64(i)
			if off < r.log.StartOffset() {
				continue // retention or DeleteRecords took it, as asked
			}
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

func sortedTPs[V any](m map[tp]V) []tp {
	out := make([]tp, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b tp) int {
		if c := slices.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return int(a.part - b.part)
	})
	return out
}
