package replication

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// check reports every violated invariant: acknowledged or committed
// records the current leader lacks (LOST), and replicas whose log below
// their HW differs from the leader's (DIVERGED: replicas must be identical
// below the HW).
func (h *harness) check() {
	n := h.leaderNode()
	if n == nil {
		h.printf("check: no leader")
		return
	}
	before := h.out.Len()
	for _, w := range h.acked {
		if r, ok := n.at(w.base); !ok || r.label != w.label {
			h.loss("acknowledged %s at offset %d: leader n%d has %s", w.label, w.base, n.id, orNothing(r, ok))
		}
	}
	offsets := make([]int64, 0, len(h.committed))
	for o := range h.committed {
		offsets = append(offsets, o)
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	for _, o := range offsets {
		if r, ok := n.at(o); o >= n.logStart && (!ok || r.label != h.committed[o]) {
			h.loss("committed %s at offset %d: leader n%d has %s", h.committed[o], o, n.id, orNothing(r, ok))
		}
	}
	for _, m := range h.nodes {
		for o := max(m.logStart, n.logStart); m.up && m != n && o < m.hw; o++ {
			mine, ok := m.at(o)
			theirs, ok2 := n.at(o)
			if ok && ok2 && mine.label != theirs.label {
				h.printf("DIVERGED n%d has %s at offset %d below its hw %d, leader n%d has %s", m.id, mine, o, m.hw, n.id, theirs)
				o = mine.last
			}
		}
	}
	if h.out.Len() == before {
		h.printf("check: ok (%d acknowledged, %d committed offsets, leader n%d)", len(h.acked), len(offsets), n.id)
	}
}

func orNothing(r record, ok bool) string {
	if !ok {
		return "nothing"
	}
	return r.String()
}

func (h *harness) state() {
	h.printf("ctl %s", h.ctl)
	for _, n := range h.nodes {
		role := "down"
		switch {
		case n.up && n.leader != nil:
			role = fmt.Sprintf("leader e%d", n.leader.LeaderEpoch())
		case n.up && n.follower != nil:
			role = fmt.Sprintf("follower e%d", n.follower.State().LeaderEpoch)
		case n.up:
			role = "idle"
		}
		h.printf("n%d %s: log %s synced=%d hw=%d epochs=%v", n.id, role, n.logString(), n.synced, n.hw, n.epochs.Entries())
		if n.up && n.leader != nil {
			s := n.leader.Status(h.now)
			line := fmt.Sprintf("  isr=%v maximal=%v", s.ISR, s.MaximalISR)
			if s.Pending != nil {
				line += fmt.Sprintf(" pending=%v", s.Pending.NewISR)
				if s.PendingRefused {
					line += " (refused)"
				}
			}
			if s.UnderMinISR {
				line += " under-min-isr"
			}
			h.printf("%s", line)
			for _, f := range s.Followers {
				h.printf("  n%d fetch-offset=%d lag=%d time-lag=%s in-isr=%v", f.ID, f.FetchOffset, f.LagOffsets, lagString(f), f.InISR)
			}
		}
	}
}

func lagString(f FollowerProgress) string {
	if f.LastCaughtUp.IsZero() {
		return "never"
	}
	return f.TimeLag.String()
}

// errString is an error with kerr values by name only.
func errString(err error) string {
	s := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		s = strings.Replace(s, ke.Error(), ke.Message, 1)
	}
	return s
}

func errorNamed(t *testing.T, d *datadriven.TestData, name string) error {
	for code := int16(-1); code < 200; code++ {
		if ke := kerr.TypedErrorForCode(code); ke != nil && ke.Message == name {
			return ke
		}
	}
	d.Fatalf(t, "no Kafka error %q", name)
	return nil
}
