package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncRequest is a SyncGroup as the state machine sees it.
type SyncRequest struct {
	Waiter     Waiter
	MemberID   string
	InstanceID string
	Generation int32
	// ProtocolType and Protocol (SyncGroup v5+) are checked when not "".
	ProtocolType string
	Protocol     string
	// Assignments is the leader's assignment by member id; ignored for
	// other members.
	Assignments map[string][]byte
}

// Sync steps a SyncGroup. The answer comes in Ready: at once, when the
// leader's assignment arrives, or (for the leader's own) once the
// assignment is durable.
func (g *Group) Sync(now time.Time, r SyncRequest) {
	if code := g.checkMember(r.MemberID, r.InstanceID, r.Generation); code != 0 {
		g.syncError(r.Waiter, code)
		return
	}
	if (r.ProtocolType != "" && r.ProtocolType != g.protocolType) || (r.Protocol != "" && r.Protocol != g.protocol) {
		g.syncError(r.Waiter, kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.byID[r.MemberID]
	switch g.state {
	case PreparingRebalance:
		g.syncError(r.Waiter, kerr.RebalanceInProgress.Code)
	case Stable:
		m.lastHeartbeat = now
		g.reply(r.Waiter, 0, nil, g.syncResult(m))
	case CompletingRebalance:
		m.lastHeartbeat = now
		if m.id == g.leader {
			for _, a := range r.Assignments {
				if len(a) > g.set.MaxMetadataBytes {
					g.syncError(r.Waiter, kerr.InvalidRequest.Code)
					return
				}
			}
		}
		if m.syncWaiter != 0 {
			g.syncError(m.syncWaiter, kerr.RebalanceInProgress.Code)
		}
		m.syncWaiter = r.Waiter
		if m.id == g.leader {
			g.assign(now, r.Assignments)
		}
	default: // Empty: no members to match
		g.syncError(r.Waiter, kerr.UnknownMemberID.Code)
	}
}

// assign takes the leader's assignment (members it left out get an empty
// one, unknown member ids are ignored, as Kafka does), makes the group
// Stable and asks for it to be stored before the parked SyncGroups are
// answered.
func (g *Group) assign(now time.Time, assignments map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignments[m.id]
		if m.assignment == nil {
			m.assignment = []byte{}
		}
	}
	g.setState(Stable, now)
	var replies []Reply
	for _, m := range g.members {
		if m.syncWaiter != 0 {
			replies = append(replies, Reply{Waiter: m.syncWaiter, Sync: g.syncResult(m)})
			m.syncWaiter = 0
		}
	}
	g.store(storeSync, replies, g.metadataRecord(now))
}

func (g *Group) syncResult(m *member) *SyncResult {
	return &SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

// checkMember is the fencing every member request goes through: the group
// is alive, the member is known and not replaced by a newer static
// incarnation, and it speaks of the current generation.
func (g *Group) checkMember(memberID, instanceID string, generation int32) int16 {
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case g.fenced(memberID, instanceID):
		return kerr.FencedInstanceID.Code
	case g.byID[memberID] == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// Heartbeat steps a Heartbeat and returns its error code.
// REBALANCE_IN_PROGRESS tells a member of the current generation to join
// again.
func (g *Group) Heartbeat(now time.Time, memberID, instanceID string, generation int32) int16 {
	if code := g.checkMember(memberID, instanceID, generation); code != 0 {
		return code
	}
	g.byID[memberID].lastHeartbeat = now
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveMember is one member leaving: by member id, or by instance id
// (LeaveGroup v3+, where an admin may leave the member id empty).
type LeaveMember struct {
	MemberID   string
	InstanceID string
}

// Leave steps a LeaveGroup: a top-level code, and one code per member.
func (g *Group) Leave(now time.Time, leaving []LeaveMember) (int16, []int16) {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	codes := make([]int16, len(leaving))
	for i, l := range leaving {
		codes[i] = g.leaveOne(now, l)
	}
	return 0, codes
}

func (g *Group) leaveOne(now time.Time, l LeaveMember) int16 {
	if l.InstanceID != "" {
		m := g.static[l.InstanceID]
		switch {
		case m == nil:
			return kerr.UnknownMemberID.Code
		case l.MemberID != "" && l.MemberID != m.id:
			return kerr.FencedInstanceID.Code
		}
		g.removeMember(now, m)
		return 0
	}
	if _, ok := g.pending[l.MemberID]; ok {
		delete(g.pending, l.MemberID)
		g.maybeCompleteJoin(now)
		return 0
	}
	m := g.byID[l.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.removeMember(now, m)
	return 0
}

// keptAlive: a member whose JoinGroup or SyncGroup is parked cannot
// heartbeat on that connection, so its session does not run out meanwhile;
// the rebalance and sync deadlines bound the wait instead.
func (g *Group) keptAlive(m *member) bool {
	return (g.state == PreparingRebalance && m.joinWaiter != 0) ||
		(g.state == CompletingRebalance && m.syncWaiter != 0)
}

// Tick applies every deadline that passed by now: pending member ids and
// sessions expire, the rebalance and sync timeouts end their waits.
func (g *Group) Tick(now time.Time) {
	if g.state == Dead {
		return
	}
	for id, exp := range g.pending {
		if !now.Before(exp) {
			delete(g.pending, id)
		}
	}
	for _, m := range append([]*member(nil), g.members...) {
		if g.byID[m.id] == m && !g.keptAlive(m) && !now.Before(m.lastHeartbeat.Add(m.sessionTimeout)) {
			g.removeMember(now, m)
		}
	}
	switch g.state {
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	case CompletingRebalance:
		if !now.Before(g.syncDeadline) {
			// Members that never sent SyncGroup (the leader among them,
			// or the group would be Stable) are dropped.
			for _, m := range append([]*member(nil), g.members...) {
				if m.syncWaiter == 0 {
					g.dropMember(m, kerr.UnknownMemberID.Code)
				}
			}
			g.prepareRebalance(now)
		}
	case Empty:
		g.expireOffsets(now)
		// As Kafka: an Empty group stays (listed, describable, deletable)
		// until offsets.retention after it emptied, with or without
		// offsets, and only then goes.
		if at := g.emptyExpiresAt(); !at.IsZero() && !now.Before(at) && len(g.offsets) == 0 {
			g.store(storeDelete, nil, g.tombstones()...)
			g.setState(Dead, now)
		}
	}
}

// emptyExpiresAt is when an Empty group with nothing left in it is
// forgotten: offsets.retention after it emptied. Zero when it never is
// (retention off), or has something to keep.
func (g *Group) emptyExpiresAt() time.Time {
	if g.state != Empty || len(g.members) > 0 || len(g.pending) > 0 || len(g.inflight) > 0 || !g.persisted || g.set.OffsetsRetention <= 0 {
		return time.Time{}
	}
	return g.stateSince.Add(g.set.OffsetsRetention)
}

// NextDeadline is when Tick next has something to do; zero if never.
func (g *Group) NextDeadline() time.Time {
	var next time.Time
	take := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if g.state == Dead {
		return next
	}
	for _, exp := range g.pending {
		take(exp)
	}
	for _, m := range g.members {
		if !g.keptAlive(m) {
			take(m.lastHeartbeat.Add(m.sessionTimeout))
		}
	}
	switch g.state {
	case PreparingRebalance:
		take(g.delayDeadline)
		take(g.rebalanceDeadline)
	case CompletingRebalance:
		take(g.syncDeadline)
	case Empty:
		take(g.offsetsExpireAt())
		take(g.emptyExpiresAt())
	}
	return next
}

// StoreFailed tells the machine that s could not be written. A failed
// assignment sends the group back to rebalancing (if nothing moved on
// since); the caller answers s.Replies with the failure's code.
func (g *Group) StoreFailed(now time.Time, s Store) {
	if s.kind == storeSync && g.state == Stable && g.generation == s.generation {
		for _, m := range g.members {
			m.assignment = nil
		}
		g.prepareRebalance(now)
	}
}

// Shutdown answers every parked request with code (the coordinator is
// closing) and marks the group Dead.
func (g *Group) Shutdown(now time.Time, code int16) {
	for _, m := range g.members {
		g.answerParked(m, code)
	}
	g.setState(Dead, now)
}

func (g *Group) store(kind storeKind, replies []Reply, records ...Record) {
	if kind != storeDelete {
		g.persisted = true
	}
	g.ready.Stores = append(g.ready.Stores, Store{
		Records:    records,
		Replies:    replies,
		kind:       kind,
		generation: g.generation,
	})
}
