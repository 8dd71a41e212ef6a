package sim

import "github.com/minikafka/minikafka/broker/batch/batchcodec"

// nonmonotonicPolls looks for nonmonotonic-poll: a consumer given an
// offset at or below one it was given before, while it did not seek. A
// fetch returns whole batches, so the first batch may begin below the
// position it asked for, when it holds that position; no other record may.
type nonmonotonicPolls struct {
	last map[int32]map[tp]int64 // consumer -> partition -> last offset given
}

func (n *nonmonotonicPolls) init() { n.last = map[int32]map[tp]int64{} }

// polled is consumer c's poll of k from pos, its records batch by batch.
func (n *nonmonotonicPolls) polled(s *Sim, c int32, k tp, pos int64, batches [][]batchcodec.Record) {
	m := n.last[c]
	if m == nil {
		m = map[tp]int64{}
		n.last[c] = m
	}
	last, seen := m[k]
	if !seen || last < pos-1 {
		last = pos - 1 // a seek forward, or the first poll
	}
	for i, recs := range batches {
		for _, r := range recs {
			if i == 0 && r.Offset < pos && len(recs) > 0 && recs[len(recs)-1].Offset >= pos {
				continue // the front of the batch holding the position
			}
			if r.Offset <= last {
				s.violate("nonmonotonic-poll", "consumer %d polled %s from %d and was given offset %d after offset %d", c, k, pos, r.Offset, last)
				return
			}
			last = r.Offset
		}
	}
	m[k] = last
}

// seek is consumer c moving its position on k back to pos (an offset
// reset): offsets from there may be given again.
func (n *nonmonotonicPolls) seek(c int32, k tp, pos int64) {
	if m := n.last[c]; m != nil {
		delete(m, k)
	}
}
