package cluster

import (
	"slices"
)

// Election and ISR rules. Each returns a partition's next state, or the
// current one when nothing changes; epochs are bumped by next.

// electKind says where a leader came from.
type electKind int

const (
	electNone    electKind = iota // nobody eligible: the partition is offline
	electISR                      // an in-sync replica: clean
	electELR                      // an eligible leader replica (KIP-966): clean
	electUnclean                  // any live replica: may lose acknowledged data
)

// electLeader picks the leader of p among the brokers active says may lead:
// the first in replica order (the preferred leader first) that is in the
// ISR, else in the ELR, else, only when unclean is allowed, any replica.
func electLeader(p Partition, active func(int32) bool, unclean bool) (int32, electKind) {
	for _, kind := range []electKind{electISR, electELR, electUnclean} {
		var pool []int32
		switch kind {
		case electISR:
			pool = p.ISR
		case electELR:
			pool = p.ELR
		case electUnclean:
			if !unclean {
				continue
			}
			pool = p.Replicas
		}
		for _, r := range p.Replicas {
			if slices.Contains(pool, r) && active(r) {
				return r, kind
			}
		}
	}
	return NoLeader, electNone
}

// withLeader is p led by leader, elected as kind. A leader from the ELR or
// an unclean election starts a new ISR of itself alone; an unclean one also
// forgets the ELR, whose members may hold records the new leader lacks.
func withLeader(p Partition, leader int32, kind electKind) Partition {
	n := p.Clone()
	n.Leader = leader
	switch kind {
	case electELR:
		n.ISR = []int32{leader}
		n.ELR = without(n.ELR, leader)
	case electUnclean:
		n.ISR = []int32{leader}
		n.ELR = nil
	case electNone:
		n.Leader = NoLeader
	}
	return n
}

// withISR is p with the ISR isr, the ELR kept as KIP-966 says: members that
// leave an ISR that is then below minISR become eligible leader replicas
// (they hold everything acknowledged so far, since acks=all needs minISR
// members), and the ELR empties once the ISR is back at minISR. With elr
// off, the last member is never removed instead, so that it can lead again
// when it returns (the rule before KIP-966).
func withISR(p Partition, isr []int32, minISR int, elr bool) Partition {
	n := p.Clone()
	if !elr {
		n.ELR = nil
		if len(isr) == 0 && len(p.ISR) > 0 {
			isr = p.ISR[:1]
			if slices.Contains(p.ISR, p.Leader) {
				isr = []int32{p.Leader}
			}
		}
		n.ISR = slices.Clone(isr)
		return n
	}
	n.ISR = slices.Clone(isr)
	if len(isr) >= minISR {
		n.ELR = nil
		return n
	}
	for _, r := range p.Replicas {
		left := slices.Contains(p.ISR, r) && !slices.Contains(isr, r)
		if left && !slices.Contains(n.ELR, r) {
			n.ELR = append(n.ELR, r)
		}
	}
	n.ELR = inReplicaOrder(p.Replicas, without(n.ELR, isr...))
	return n
}

// next stamps the epochs on a changed state: the partition epoch on every
// change, the leader epoch on a change of leader. It reports false when
// nothing changed.
func next(cur, n Partition) (Partition, bool) {
	if n.Leader == cur.Leader && slices.Equal(n.ISR, cur.ISR) && slices.Equal(n.ELR, cur.ELR) &&
		slices.Equal(n.Replicas, cur.Replicas) && slices.Equal(n.AddingReplicas, cur.AddingReplicas) &&
		slices.Equal(n.RemovingReplicas, cur.RemovingReplicas) {
		return cur, false
	}
	n.PartitionEpoch = cur.PartitionEpoch + 1
	n.LeaderEpoch = cur.LeaderEpoch
	if n.Leader != cur.Leader {
		n.LeaderEpoch++
	}
	return n, true
}

func without(s []int32, drop ...int32) []int32 {
	var out []int32
	for _, v := range s {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}

// inReplicaOrder is set's members in the order of replicas (the order the
// controller records an ISR in), dropping any that are not replicas.
func inReplicaOrder(replicas, set []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !slices.Contains(set, r) })
}
