package replication

import (
	"fmt"
	"slices"
	"strings"
)

// deliver hands the controller's state to every live node, as the
// metadata log would: a MetadataUpdate to a leader of the current epoch, a
// new Leader or Follower to a node whose role or epoch changed.
func (h *harness) deliver() {
	c := h.ctl
	for _, n := range h.nodes {
		if !n.up {
			continue
		}
		switch {
		case c.leader == n.id && n.leader != nil && n.leader.LeaderEpoch() == c.leaderEpoch:
			h.apply(n, n.leader.Step(MetadataUpdate{LeaderEpoch: c.leaderEpoch, PartitionEpoch: c.partitionEpoch,
				ISR: slices.Clone(c.isr), ELR: slices.Clone(c.elr), Eligible: c.eligible(), Now: h.now}))
		case c.leader == n.id:
			l, acts, err := NewLeader(LeaderConfig{
				Self: n.id, BrokerEpoch: n.brokerEpoch, Replicas: c.replicas, ISR: c.isr, ELR: c.elr,
				LeaderEpoch: c.leaderEpoch, PartitionEpoch: c.partitionEpoch, MinISR: c.minISR, LagTime: h.lag,
				LogStart: n.logStart, LogEnd: n.end(), DurableEnd: n.reported, HW: n.hw, Epochs: n.epochs,
				Eligible: c.eligible(), Now: h.now, mut: h.mut,
			})
			if err != nil {
				h.printf("n%d cannot lead: %v", n.id, err)
				continue
			}
			n.leader, n.follower = l, nil
			h.printf("n%d leads epoch %d: log %s, hw %d", n.id, c.leaderEpoch, n.logString(), n.hw)
			h.apply(n, acts)
		case c.leader >= 0 && (n.follower == nil || n.follower.State().LeaderEpoch != c.leaderEpoch):
			f, acts, err := NewFollower(FollowerConfig{
				Self: n.id, BrokerEpoch: n.brokerEpoch, Leader: c.leader, LeaderEpoch: c.leaderEpoch, CountDurable: h.syncAlways,
				LogStart: n.logStart, LogEnd: n.end(), DurableEnd: n.reported, HW: n.hw, Epochs: n.epochs, mut: h.mut,
			})
			if err != nil {
				h.printf("n%d cannot follow: %v", n.id, err)
				continue
			}
			n.leader, n.follower = nil, f
			h.printf("n%d follows n%d in epoch %d", n.id, c.leader, c.leaderEpoch)
			h.apply(n, acts)
		case c.leader < 0 && (n.leader != nil || n.follower != nil):
			n.leader, n.follower = nil, nil
			h.printf("n%d: no leader", n.id)
		}
	}
}

// resolveWaiters answers the acks=all produces that can be answered.
func (h *harness) resolveWaiters() {
	var left []waiter
	for _, w := range h.waiters {
		n := h.nodes[w.node-1]
		switch {
		case !n.up || n.leader == nil || n.leader.LeaderEpoch() != w.leaderEpoch:
			h.printf("%s failed: its leader is gone (not acknowledged)", w.label)
		case n.leader.HW() >= w.end:
			if err := n.leader.AfterAppendCheck(); err != nil {
				h.printf("%s failed: %s", w.label, errString(err))
				continue
			}
			h.printf("%s acknowledged", w.label)
			h.acked = append(h.acked, w)
		default:
			left = append(left, w)
		}
	}
	h.waiters = left
}

// apply performs a node's actions on its log and prints them.
func (h *harness) apply(n *node, acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case FetchAnswer:
			switch {
			case a.Err != nil:
				h.printf("n%d answer %s", n.id, errString(a.Err))
			case a.Diverging != nil:
				h.printf("n%d answer diverging epoch=%d end=%d", n.id, a.Diverging.Epoch, a.Diverging.EndOffset)
			default:
				h.printf("n%d answer serve [%d,%d) hw=%d", n.id, a.From, a.To, a.HighWatermark)
			}
		case AdvanceHW:
			h.advanceHW(n, a.To)
		case ProposeISR:
			h.printf("n%d propose isr=%v seq=%d at partition-epoch=%d", n.id, a.NewISR, a.Seq, a.PartitionEpoch)
			h.inbox = append(h.inbox, inflight{p: a, from: n.leader})
		case SaveEpochs:
			n.saved = n.epochs.Marshal()
			h.printf("n%d save epochs %v", n.id, n.epochs.Entries())
		case Truncate:
			n.keepBelow(a.To)
			if n.end() != a.To {
				h.printf("n%d MISMATCH: truncated inside a batch, end %d", n.id, n.end())
			}
			n.synced, n.reported = min(n.synced, n.end()), min(n.reported, n.end())
			h.printf("n%d truncate to %d: log %s", n.id, a.To, n.logString())
			if a.To < n.hw {
				h.printf("n%d WARNING truncated below its hw %d", n.id, n.hw)
				n.hw = a.To
			}
		case Append:
			h.appendFetched(n, a.Batches)
		case ResetLog:
			n.log, n.logStart, n.synced, n.reported = nil, a.Start, a.Start, a.Start
			h.printf("n%d reset log at %d", n.id, a.Start)
		case DeleteBefore:
			i := 0
			for i < len(n.log) && n.log[i].last < a.Offset {
				i++
			}
			n.log, n.logStart = n.log[i:], a.Offset
			h.printf("n%d delete before %d", n.id, a.Offset)
		case Backoff:
			h.printf("n%d backoff: %s", n.id, errString(a.Err))
		case NeedMetadata:
			h.printf("n%d need metadata: %s", n.id, errString(a.Err))
		default:
			panic(fmt.Sprintf("unknown action %T", a))
		}
	}
}

func (h *harness) appendFetched(n *node, batches []BatchInfo) {
	ln := h.nodes[n.follower.State().Leader-1]
	var got []string
	for _, b := range batches {
		r, ok := ln.at(b.BaseOffset)
		if !ok || r.base != b.BaseOffset {
			panic(fmt.Sprintf("n%d appends %v, not in n%d's log", n.id, b, ln.id))
		}
		n.log = append(n.log, r)
		got = append(got, r.String())
	}
	if !h.syncAlways {
		n.reported = n.end()
	}
	h.printf("n%d append %s", n.id, strings.Join(got, " "))
}

// advanceHW records a node's new HW and, on a leader, what it commits.
func (h *harness) advanceHW(n *node, to int64) {
	if to < n.maxHW {
		h.printf("n%d HW BACKWARDS %d -> %d", n.id, n.maxHW, to)
	}
	from := n.hw
	n.hw, n.maxHW = to, max(n.maxHW, to)
	h.printf("n%d hw -> %d", n.id, to)
	if n.leader == nil {
		return
	}
	for o := from; o < to; o++ {
		r, ok := n.at(o)
		if !ok {
			continue
		}
		if prev, ok := h.committed[o]; ok && prev != r.label {
			h.loss("committed %s at offset %d: n%d commits %s over it", prev, o, n.id, r.label)
		}
		h.committed[o] = r.label
	}
}

// loss reports a lost acknowledged or committed record: a violation under
// sync=always; under sync=never, where acknowledgements come from the page
// cache, a power loss may take them (the policy allows it), so the scenario
// only notes it.
func (h *harness) loss(format string, args ...any) {
	if h.syncAlways {
		h.printf("LOST "+format, args...)
		return
	}
	h.printf("lost (sync=never allows it): "+format, args...)
}
