package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The transaction checkers, each fed its anomaly.

func TestTxnCheckers(t *testing.T) {
	k := tp{part: 1}
	vals := func(vs ...string) [][]byte {
		var out [][]byte
		for _, v := range vs {
			out = append(out, []byte(v))
		}
		return out
	}
	cases := []struct {
		name    string
		feed    func(s *Sim, h *txnHistory)
		anomaly string
	}{
		{"clean", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0", "x0-t1-p1-r0"))
			h.ended(s, "x0-t1", txnCommitted)
			h.acked("x0-t2", vals("x0-t2-p0-r0"))
			h.ended(s, "x0-t2", txnAborted)
			h.read(s, 7, k, 0, []byte("x0-t1-p1-r0"))
			h.final(s, map[string][]string{"a": {"x0-t1-p0-r0"}, "b": {"x0-t1-p1-r0"}}, nil)
		}, ""},
		{"aborted read, then aborted", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0"))
			h.read(s, 7, k, 0, []byte("x0-t1-p0-r0"))
			h.ended(s, "x0-t1", txnAborted)
		}, "aborted-read"},
		{"aborted, then read", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0"))
			h.ended(s, "x0-t1", txnAborted)
			h.read(s, 7, k, 0, []byte("x0-t1-p0-r0"))
		}, "aborted-read"},
		{"aborted, shown at the end", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0"))
			h.ended(s, "x0-t1", txnAborted)
			h.final(s, map[string][]string{"a": {"x0-t1-p0-r0"}}, nil)
		}, "aborted-read"},
		{"committed write lost", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0", "x0-t1-p1-r0"))
			h.ended(s, "x0-t1", txnCommitted)
			h.final(s, map[string][]string{"a": {}}, nil)
		}, "txn-lost-write"},
		{"seen partly", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0", "x0-t1-p1-r0"))
			h.ended(s, "x0-t1", txnCommitted)
			h.final(s, map[string][]string{"a": {"x0-t1-p0-r0"}}, nil)
		}, "txn-partial-read"},
		{"unknown end, seen partly", func(s *Sim, h *txnHistory) {
			h.acked("x0-t1", vals("x0-t1-p0-r0", "x0-t1-p1-r0"))
			h.ended(s, "x0-t1", txnUnknown)
			h.final(s, map[string][]string{"a": {"x0-t1-p1-r0"}}, nil)
		}, "txn-partial-read"},
		{"hanging", func(s *Sim, h *txnHistory) {
			h.final(s, nil, []string{"tx-0 has its last stable offset at 3, its high watermark at 9"})
		}, "hanging-transaction"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSim()
			tc.feed(s, &s.checks.txns)
			assert.Equal(t, tc.anomaly, reported(s))
		})
	}
}
