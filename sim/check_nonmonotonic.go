package sim

import "github.com/minikafka/minikafka/broker/batch/batchtest"

// nonmonotonicPolls looks for nonmonotonic-poll: a consumer whose polls
// return offsets that go back (below the last one it was given) while it
// did not seek.
type nonmonotonicPolls struct {
	last map[int32]map[tp]int64
}

func (n *nonmonotonicPolls) init() { n.last = map[int32]map[tp]int64{} }

func (n *nonmonotonicPolls) polled(s *Sim, c *consumerClient, k tp, recs []batchtest.Record) {
	m := n.last[c.id]
	if m == nil {
		m = map[tp]int64{}
		n.last[c.id] = m
	}
	last, seen := m[k]
	for _, r := range recs {
		if r.Offset < c.pos {
			continue // the front of the batch holding the position
		}
		if seen && r.Offset <= last {
			s.violate("nonmonotonic-poll", "consumer %d polled %s offset %d after offset %d", c.id, k, r.Offset, last)
			return
		}
		last, seen = r.Offset, true
	}
	if seen {
		m[k] = last
	}
}
