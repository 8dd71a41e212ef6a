package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The copy checkers, each fed its anomaly. Copier 0 is tx5 (transactions
// x5-t<k>) on cin-0, whose records are a, b, c; copier 1 is tx6 on cin-1.

func TestCopyCheckers(t *testing.T) {
	input := map[int32]map[int64]string{0: {0: "a", 1: "b", 2: "c"}, 1: {0: "p", 1: "q"}}
	// run begins and ends a copier transaction at times from and to (to
	// < 0: aborted).
	run := func(s *Sim, h *copyHistory, name string, part int32, from, to int64, readFrom string, start, end int64) {
		s.now = start
		h.began(s, name, part, from, to, readFrom)
		if end < 0 {
			h.ended(name, txnAborted, -end)
			return
		}
		h.ended(name, txnCommitted, end)
	}
	cases := []struct {
		name    string
		feed    func(s *Sim, h *copyHistory)
		anomaly string
	}{
		{"clean", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 2, "", 10, 20)
			run(s, h, "x6-t1", 1, 0, 2, "", 11, 21)
			run(s, h, "x5-t2", 0, 2, 3, "x5-t1", 30, 40)
			// x5-t1 and x6-t1 ran at the same time: their records in
			// opposite orders in tx-0 and tx-1 are no anomaly.
			h.final(s, map[string][]string{
				"tx-0": {"x5-t1-c0.0.a", "x6-t1-c1.0.p", "x5-t2-c0.2.c"},
				"tx-1": {"x6-t1-c1.1.q", "x5-t1-c0.1.b"},
			}, copyEnd{
				committed: map[int32]int64{0: 3, 1: 2},
				commits:   []offsetCommit{{1, 2, "x6-t1"}, {0, 2, "x5-t1"}, {0, 3, "x5-t2"}},
				input:     input,
			})
		}, ""},
		{"input record lost", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 2, "", 10, 20)
			h.final(s, map[string][]string{"tx-0": {"x5-t1-c0.0.a"}},
				copyEnd{committed: map[int32]int64{0: 2}, commits: []offsetCommit{{0, 2, "x5-t1"}}, input: input})
		}, "exactly-once"},
		{"input record copied twice", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 2, "", 10, 20)
			run(s, h, "x5-t2", 0, 1, 2, "x5-t1", 30, 40)
			h.final(s, map[string][]string{"tx-0": {"x5-t1-c0.0.a", "x5-t1-c0.1.b", "x5-t2-c0.1.b"}},
				copyEnd{committed: map[int32]int64{0: 2}, commits: []offsetCommit{{0, 2, "x5-t1"}, {0, 2, "x5-t2"}}, input: input})
		}, "exactly-once"},
		{"copied past the committed offset", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 1, "", 10, 20)
			run(s, h, "x5-t2", 0, 1, 2, "x5-t1", 30, 40)
			h.final(s, map[string][]string{"tx-0": {"x5-t1-c0.0.a", "x5-t2-c0.1.b"}},
				copyEnd{committed: map[int32]int64{0: 1}, commits: []offsetCommit{{0, 1, "x5-t1"}}, input: input})
		}, "exactly-once"},
		{"a copy of another record", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 1, "", 10, 20)
			h.final(s, map[string][]string{"tx-0": {"x5-t1-c0.0.b"}},
				copyEnd{committed: map[int32]int64{0: 1}, commits: []offsetCommit{{0, 1, "x5-t1"}}, input: input})
		}, "exactly-once"},
		{"started from an aborted transaction's offset", func(s *Sim, h *copyHistory) {
			run(s, h, "x5-t1", 0, 0, 2, "", 10, -20)
			run(s, h, "x5-t2", 0, 2, 3, "x5-t1", 30, 40)
		}, "G1a"},
		{"write cycle in one copier", func(s *Sim, h *copyHistory) {
			// The offsets log orders x5-t1 before x5-t2, tx-0 the other way.
			run(s, h, "x5-t1", 0, 0, 1, "", 10, 20)
			run(s, h, "x5-t2", 0, 1, 2, "x5-t1", 30, 40)
			h.final(s, map[string][]string{"tx-0": {"x5-t2-c0.1.b", "x5-t1-c0.0.a"}},
				copyEnd{committed: map[int32]int64{0: 2}, commits: []offsetCommit{{0, 1, "x5-t1"}, {0, 2, "x5-t2"}}, input: input})
		}, "G0"},
		{"write cycle across copiers, in real time", func(s *Sim, h *copyHistory) {
			// x5-t1 committed before x6-t1 began, which committed before
			// x5-t2 began: tx-0 and tx-1 order them so, and tx-2 puts
			// x5-t2 before x5-t1. (The log shows x6-t1's commit only, so
			// that the cycle is this one.)
			input := map[int32]map[int64]string{0: {0: "a", 1: "b", 2: "c", 3: "d"}, 1: {0: "p", 1: "q"}}
			run(s, h, "x5-t1", 0, 0, 2, "", 10, 20)
			run(s, h, "x6-t1", 1, 0, 2, "", 30, 40)
			run(s, h, "x5-t2", 0, 2, 4, "x5-t1", 50, 60)
			h.final(s, map[string][]string{
				"tx-0": {"x5-t1-c0.0.a", "x6-t1-c1.0.p"},
				"tx-1": {"x6-t1-c1.1.q", "x5-t2-c0.2.c"},
				"tx-2": {"x5-t2-c0.3.d", "x5-t1-c0.1.b"},
			}, copyEnd{committed: map[int32]int64{0: 4, 1: 2}, commits: []offsetCommit{{1, 2, "x6-t1"}}, input: input})
		}, "G0"},
		{"cycle through a read", func(s *Sim, h *copyHistory) {
			// x5-t2 started from x5-t1's offset, and its record precedes
			// x5-t1's in tx-0. (The log shows x5-t2's commit only: a
			// history of the checker's, so that no ww cycle forms.)
			run(s, h, "x5-t1", 0, 0, 1, "", 10, 20)
			run(s, h, "x5-t2", 0, 1, 2, "x5-t1", 30, 40)
			h.final(s, map[string][]string{"tx-0": {"x5-t2-c0.1.b", "x5-t1-c0.0.a"}},
				copyEnd{committed: map[int32]int64{0: 2}, commits: []offsetCommit{{0, 2, "x5-t2"}}, input: input})
		}, "G1c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSim()
			tc.feed(s, &s.checks.copies)
			assert.Equal(t, tc.anomaly, reported(s))
		})
	}
}
