package sim

import (
	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchcodec"
)

// duplicates looks for duplicate: an idempotent producer's record stored
// twice, at two offsets of one partition, in what a consumer read or in a
// leader's log at the end of the run. Every record value is unique to one
// send of one producer, retries included, so a value at two offsets is a
// retry stored twice.
//
// One duplicate is Kafka's as much as ours, and excused: a follower whose
// log ends below its leader's log start starts over there empty, and so
// without the state of the producers whose batches lay below it (Kafka's
// truncateFullyAndStartAt clears it too); elected, it takes a retry of such
// a batch as new. A copy below the start a replica of the partition was so
// reset to is not held against the copy above it.
//
// Nor is a copy a power loss took with every copy unsynced (sync=interval,
// never): the producer's retry of it is stored again, and a read of the
// lost copy may still have been in flight.
type duplicates struct {
	seen    map[tp]map[string]int64 // value -> offset, from reads
	dropped map[tp]int64            // the highest start a replica was reset to
}

func (d *duplicates) init() { d.seen, d.dropped = map[tp]map[string]int64{}, map[tp]int64{} }

// stateDropped is a replica of k reset to start at start.
func (d *duplicates) stateDropped(k tp, start int64) { d.dropped[k] = max(d.dropped[k], start) }

// read checks what a consumer read; lost says whether a value at an
// offset of k was lost with every copy unsynced (offsetHistory.wasLost).
func (d *duplicates) read(s *Sim, k tp, recs []batchcodec.Record, lost func(k tp, off int64, v []byte) bool) {
	m := d.seen[k]
	if m == nil {
		m = map[string]int64{}
		d.seen[k] = m
	}
	for _, r := range recs {
		if off, ok := m[string(r.Value)]; ok && off != r.Offset {
			if first := min(off, r.Offset); first < d.dropped[k] {
				s.stats.Faults["duplicate-after-log-reset"]++
				m[string(r.Value)] = r.Offset
				continue
			}
			if lost(k, off, r.Value) || lost(k, r.Offset, r.Value) {
				s.stats.Faults["duplicate-of-lost-unsynced"]++
				m[string(r.Value)] = r.Offset
				continue
			}
			s.violate("duplicate", "%q read at %s offsets %d and %d", r.Value, k, off, r.Offset)
			return
		}
		m[string(r.Value)] = r.Offset
	}
}

func (d *duplicates) log(s *Sim, r view) {
	at := map[string]int64{}
	for _, bt := range storedBatches(r.log, r.log.StartOffset(), r.log.EndOffset()) {
		if h, err := batch.ParseHeader(bt.Data); err == nil && h.Attributes.Control() {
			continue // a transaction marker, not a producer's record
		}
		recs := decode(s, [][]byte{bt.Data})
		if len(recs) > 0 && recs[0].Key != nil {
			continue // a coordinator's keyed state (__transaction_state): a value may recur
		}
		for _, rec := range recs {
			if off, ok := at[string(rec.Value)]; ok {
				s.violate("duplicate", "%q stored at %s offsets %d and %d on leader %d", rec.Value, r.tp, off, rec.Offset, r.broker)
				return
			}
			at[string(rec.Value)] = rec.Offset
		}
	}
}
