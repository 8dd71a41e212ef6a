package sim

import "github.com/minikafka/minikafka/broker/batch/batchcodec"

// pollSkips looks for poll-skip: a poll that starts past the consumer's
// position, or has a hole, so the consumer never sees records that are in
// the log (offsets are dense here: no compaction, no transactions). A poll
// from below the log's start begins at the start (the consumer was reset).
type pollSkips struct{}

func (p *pollSkips) init() {}

func (p *pollSkips) polled(s *Sim, c int32, k tp, pos int64, recs []batchcodec.Record) {
	next := pos
	for _, r := range recs {
		if r.Offset < next {
			continue
		}
		if r.Offset > next {
			s.violate("poll-skip", "consumer %d at %s offset %d was given offset %d next", c, k, next, r.Offset)
			return
		}
		next++
	}
}
