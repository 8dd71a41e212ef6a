package replication

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ISR changes: the leader proposes, the controller decides (AlterPartition,
// checked against the partition epoch, KIP-497), the metadata log says what
// was committed. One proposal at a time, made against the committed ISR.

// tick retries a proposal whose backoff has passed, else shrinks the ISR.
func (l *Leader) tick(now time.Time) []Action {
	if l.pending != nil {
		if !l.refused && !l.retryAt.IsZero() && !now.Before(l.retryAt) {
			l.retryAt = time.Time{}
			return []Action{l.pending.clone()}
		}
		if !l.mut.has(mutProposeWhilePending) {
			return nil
		}
	}
	return l.maybeShrink(now)
}

// caughtUp is Kafka's in-sync test for an ISR member: at the leader's
// (durable) end, or caught up within LagTime.
func (l *Leader) caughtUp(f *follower, now time.Time) bool {
	return f.fetchOffset >= l.durable || now.Sub(f.lastCaughtUp) <= l.lagTime
}

// maybeShrink proposes the ISR without the members that have not caught up
// for LagTime. The leader never removes itself.
func (l *Leader) maybeShrink(now time.Time) []Action {
	var keep []int32
	for _, id := range l.isr {
		if f := l.follower(id); id != l.self && (f == nil || !l.caughtUp(f, now)) {
			continue
		}
		keep = append(keep, id)
	}
	if len(keep) == len(l.isr) {
		return nil
	}
	return l.propose(keep)
}

// joinable says f may join the ISR: it has everything below the HW, and
// everything before this leader epoch began, whose acknowledged records may
// lie above this leader's HW (KAFKA-7128); and the latest metadata has it
// unfenced (KIP-841), registered with the broker epoch it fetched with
// (KIP-903).
func (l *Leader) joinable(f *follower) bool {
	if f.fetchOffset < l.hw || (f.fetchOffset < l.epochStart && !l.mut.has(mutExpandBeforeEpochStart)) {
		return false
	}
	m, ok := l.eligibleMember(f.id)
	return ok && (m.BrokerEpoch < 0 || f.brokerEpoch < 0 || m.BrokerEpoch == f.brokerEpoch)
}

// maybeExpand proposes adding f, which just fetched, to the ISR if it may
// join. As in Kafka this is decided on the follower's fetch only: a
// position it reported long ago says nothing of whether it keeps up now
// (re-adding members that just lagged out would make the ISR flap).
//
// A proposal the controller refused as ineligible is not made again, the
// same members with the same broker epochs, before the metadata is
// refreshed; a member that fetched since with another broker epoch makes
// it another proposal. (Holding every expansion until new metadata stalled
// the ISR for good when the refused proposal was a retry carrying a
// member's broker epoch from before it registered again, and this
// leader's metadata already had the new one: none newer was coming. Found
// by the simulator.)
func (l *Leader) maybeExpand(f *follower) []Action {
	if (l.pending != nil && !l.mut.has(mutProposeWhilePending)) || slices.Contains(l.isr, f.id) || !l.joinable(f) {
		return nil
	}
	isr := inReplicaOrder(l.replicas, append(slices.Clone(l.isr), f.id))
	if l.held != nil && slices.Equal(l.members(isr), l.held) {
		return nil
	}
	return l.propose(isr)
}

// propose makes isr the change in flight. Each member goes with the broker
// epoch it fetched with (-1 when it has not fetched in this epoch), the
// leader with its own.
func (l *Leader) propose(isr []int32) []Action {
	if l.pending != nil && slices.Equal(memberIDs(l.pending.NewISR), isr) {
		return nil
	}
	l.seq++
	p := ProposeISR{Seq: l.seq, LeaderEpoch: l.leaderEpoch, PartitionEpoch: l.partitionEpoch, NewISR: l.members(isr)}
	l.pending, l.refused, l.retryAt, l.held = &p, false, time.Time{}, nil
	return []Action{p.clone()}
}

// members are isr's ids with the broker epochs a proposal gives them.
func (l *Leader) members(isr []int32) []ISRMember {
	out := make([]ISRMember, 0, len(isr))
	for _, id := range isr {
		e := l.selfEpoch
		if id != l.self {
			e = -1
			if f := l.follower(id); f != nil && !l.mut.has(mutNoBrokerEpoch) {
				e = f.brokerEpoch
			}
		}
		out = append(out, ISRMember{ID: id, BrokerEpoch: e})
	}
	return out
}

// alterResult takes the controller's answer to the proposal in flight.
// Answers to an earlier proposal (another Seq) are stale and ignored.
func (l *Leader) alterResult(ev AlterPartitionResult) []Action {
	p := l.pending
	if p == nil || ev.Seq != p.Seq || l.refused {
		return nil
	}
	if ev.Err == nil {
		if ev.LeaderEpoch != l.leaderEpoch || ev.PartitionEpoch < p.PartitionEpoch {
			l.refused = true // not this proposal's outcome; the metadata will say
			return nil
		}
		return l.commit(ev.ISR, ev.PartitionEpoch)
	}
	switch {
	case errors.Is(ev.Err, kerr.IneligibleReplica), errors.Is(ev.Err, kerr.OperationNotAttempted):
		// The controller says it did not apply this, at the current
		// partition epoch, and no controller ever will: back to the
		// committed ISR. The metadata it judged by is newer than ours.
		l.pending, l.held = nil, p.NewISR
		return l.maybeAdvanceHW()
	case retriable(ev.Err):
		l.retryAt = ev.Now.Add(l.retryBackoff)
		return nil
	}
	// INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH, NOT_LEADER...: dropped,
	// never resent. An earlier attempt may still have been applied (its
	// answer lost, this one a retry), so the proposal keeps counting in the
	// maximal ISR until the metadata says what was committed.
	l.refused = true
	return nil
}

// retriable says an AlterPartition error is worth resending the same
// proposal for: a retriable Kafka error that does not say our view is
// stale, or no answer at all (not a Kafka error).
func retriable(err error) bool {
	for _, stale := range []error{kerr.InvalidUpdateVersion, kerr.FencedLeaderEpoch, kerr.NotLeaderForPartition,
		kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.StaleBrokerEpoch, kerr.InvalidRequest} {
		if errors.Is(err, stale) {
			return false
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return true
}

// metadata takes a committed state of this leader epoch. A newer partition
// epoch replaces the ISR and settles whatever was in flight; any update
// refreshes who may join, min.insync.replicas (a lower one may let the
// HW move) and the replica set.
func (l *Leader) metadata(ev MetadataUpdate) []Action {
	if ev.LeaderEpoch != l.leaderEpoch || ev.PartitionEpoch < l.partitionEpoch {
		return nil
	}
	l.eligible = slices.Clone(ev.Eligible)
	l.elr = slices.Clone(ev.ELR)
	l.held = nil
	moved := ev.Replicas != nil && !slices.Equal(ev.Replicas, l.replicas) && slices.Contains(ev.Replicas, l.self)
	if moved {
		l.setReplicas(ev.Replicas)
		if p := l.pending; p != nil && ev.PartitionEpoch >= p.PartitionEpoch && slices.ContainsFunc(p.NewISR, func(m ISRMember) bool {
			return !slices.Contains(l.replicas, m.ID)
		}) {
			// The change in flight names a replica this partition epoch no
			// longer has (proposed between the AlterPartition answer that
			// completed a reassignment and the metadata that removed the
			// replica): no controller can commit it at this epoch, and
			// kept in the maximal ISR it would hold the HW forever.
			l.pending, l.refused, l.retryAt = nil, false, time.Time{}
		}
	}
	minChanged := ev.MinISR > 0 && ev.MinISR != l.minISR
	if ev.MinISR > 0 {
		l.minISR = ev.MinISR
	}
	if ev.PartitionEpoch > l.partitionEpoch {
		return l.commit(ev.ISR, ev.PartitionEpoch)
	}
	if minChanged || moved {
		return l.maybeAdvanceHW()
	}
	return nil
}

// setReplicas takes a new replica set of the same leader epoch (a
// reassignment): the followers kept keep what the leader knows of them, a
// new one starts unknown and outside the ISR (it joins like any other,
// once caught up), and one removed is forgotten, so that its fetches are
// refused and its position bounds nothing.
func (l *Leader) setReplicas(replicas []int32) {
	var fs []follower
	for _, id := range replicas {
		if id == l.self {
			continue
		}
		if f := l.follower(id); f != nil {
			fs = append(fs, *f)
			continue
		}
		fs = append(fs, follower{id: id, brokerEpoch: -1, fetchOffset: -1, lastFetchLeaderEnd: -1, logStart: -1})
	}
	l.replicas, l.followers = slices.Clone(replicas), fs
	l.isr = inReplicaOrder(l.replicas, l.isr)
}

// commit installs a committed ISR, which ends the change in flight. The
// next change comes with the next fetch or tick.
func (l *Leader) commit(isr []int32, partitionEpoch int32) []Action {
	l.isr = inReplicaOrder(l.replicas, isr)
	l.partitionEpoch = partitionEpoch
	l.pending, l.refused, l.retryAt = nil, false, time.Time{}
	return l.maybeAdvanceHW()
}

// NextDeadline is the earliest time at which a Tick may have something to
// do (a retry due, an ISR member reaching LagTime), zero when none: for a
// shell or simulator that schedules ticks instead of polling.
func (l *Leader) NextDeadline() time.Time {
	var d time.Time
	earliest := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if l.pending != nil {
		if !l.refused && !l.retryAt.IsZero() {
			earliest(l.retryAt)
		}
		return d
	}
	for _, id := range l.isr {
		if f := l.follower(id); f != nil && f.fetchOffset < l.durable {
			earliest(f.lastCaughtUp.Add(l.lagTime + 1))
		}
	}
	return d
}

func (p ProposeISR) clone() ProposeISR {
	p.NewISR = slices.Clone(p.NewISR)
	return p
}

func memberIDs(ms []ISRMember) []int32 {
	out := make([]int32, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
