package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinRequest is a JoinGroup as the state machine sees it.
type JoinRequest struct {
	Waiter     Waiter
	MemberID   string // "" for a member joining for the first time
	InstanceID string // group.instance.id; "" for a dynamic member
	// NewMemberID is the id to hand out if the member turns out to be new
	// (the shell makes it, so the machine needs no randomness).
	NewMemberID string
	// RequireKnownMemberID: JoinGroup v4+, where a new dynamic member first
	// gets MEMBER_ID_REQUIRED with its id and must join again with it.
	RequireKnownMemberID bool
	// SkipAssignmentOK: JoinGroup v9+, where a static leader that rejoins a
	// Stable group can be told to keep the current assignment (KIP-814).
	SkipAssignmentOK bool
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	// RebalanceTimeout: zero or negative (JoinGroup v0) means SessionTimeout.
	RebalanceTimeout time.Duration
}

func metadataBytes(ps []Protocol) int {
	n := 0
	for _, p := range ps {
		n += len(p.Name) + len(p.Metadata)
	}
	return n
}

// Join steps a JoinGroup. The answer comes in Ready, now or once the
// rebalance completes.
func (g *Group) Join(now time.Time, r JoinRequest) {
	if r.RebalanceTimeout <= 0 {
		r.RebalanceTimeout = r.SessionTimeout
	}
	switch {
	case g.state == Dead:
		g.joinError(r.Waiter, r.MemberID, kerr.CoordinatorNotAvailable.Code)
	case r.SessionTimeout < g.set.MinSessionTimeout || r.SessionTimeout > g.set.MaxSessionTimeout:
		g.joinError(r.Waiter, r.MemberID, kerr.InvalidSessionTimeout.Code)
	case metadataBytes(r.Protocols) > g.set.MaxMetadataBytes:
		g.joinError(r.Waiter, r.MemberID, kerr.InvalidRequest.Code)
	case r.MemberID == "":
		g.joinNew(now, r)
	default:
		g.joinKnown(now, r)
	}
}

func (g *Group) full() bool {
	return g.set.MaxMembers > 0 && len(g.members)+len(g.pending) >= g.set.MaxMembers
}

func (g *Group) joinNew(now time.Time, r JoinRequest) {
	if !g.supportsProtocols(r.ProtocolType, r.Protocols) {
		g.joinError(r.Waiter, r.MemberID, kerr.InconsistentGroupProtocol.Code)
		return
	}
	if r.InstanceID != "" {
		if m := g.static[r.InstanceID]; m != nil {
			g.replaceStatic(now, m, r)
			return
		}
	}
	if g.full() {
		g.joinError(r.Waiter, r.MemberID, kerr.GroupMaxSizeReached.Code)
		return
	}
	if r.InstanceID == "" && r.RequireKnownMemberID {
		// The member must come back with this id; until then it counts as
		// pending, which holds a rebalance open for at most a session.
		g.pending[r.NewMemberID] = now.Add(r.SessionTimeout)
		g.joinError(r.Waiter, r.NewMemberID, kerr.MemberIDRequired.Code)
		return
	}
	g.addMember(now, r.NewMemberID, r)
}

func (g *Group) joinKnown(now time.Time, r JoinRequest) {
	if _, ok := g.pending[r.MemberID]; ok {
		if !g.supportsProtocols(r.ProtocolType, r.Protocols) {
			g.joinError(r.Waiter, r.MemberID, kerr.InconsistentGroupProtocol.Code)
			return
		}
		delete(g.pending, r.MemberID)
		g.addMember(now, r.MemberID, r)
		return
	}
	if g.fenced(r.MemberID, r.InstanceID) {
		g.joinError(r.Waiter, r.MemberID, kerr.FencedInstanceID.Code)
		return
	}
	m := g.byID[r.MemberID]
	if m == nil {
		g.joinError(r.Waiter, r.MemberID, kerr.UnknownMemberID.Code)
		return
	}
	if !g.supportsProtocols(r.ProtocolType, r.Protocols) {
		g.joinError(r.Waiter, r.MemberID, kerr.InconsistentGroupProtocol.Code)
		return
	}
	m.lastHeartbeat = now
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, r)
		g.maybeCompleteJoin(now)
	case CompletingRebalance:
		if m.sameProtocols(r.Protocols) {
			// It lost the JoinGroup answer: give it the same one again.
			g.reply(r.Waiter, 0, g.joinResult(m, false), nil)
			return
		}
		g.updateMember(m, r)
		g.prepareRebalance(now)
	case Stable:
		if m.id != g.leader && m.sameProtocols(r.Protocols) {
			// A follower with nothing new: it keeps its assignment.
			g.reply(r.Waiter, 0, g.joinResult(m, false), nil)
			return
		}
		// The leader, or a member whose subscription changed (for a
		// cooperative member: the partitions it now owns), needs a new
		// assignment for everyone.
		g.updateMember(m, r)
		g.prepareRebalance(now)
	default:
		g.joinError(r.Waiter, r.MemberID, kerr.UnknownMemberID.Code)
	}
}

// updateMember takes r's protocols, timeouts and client, and parks r.
func (g *Group) updateMember(m *member, r JoinRequest) {
	m.protocols = r.Protocols
	m.sessionTimeout = r.SessionTimeout
	m.rebalanceTimeout = r.RebalanceTimeout
	m.clientID = r.ClientID
	m.clientHost = r.ClientHost
	if m.joinWaiter != 0 {
		// A retried JoinGroup supersedes the earlier one.
		g.joinError(m.joinWaiter, m.id, kerr.RebalanceInProgress.Code)
	}
	m.joinWaiter = r.Waiter
}

func (g *Group) addMember(now time.Time, id string, r JoinRequest) {
	m := &member{
		id:            id,
		instanceID:    r.InstanceID,
		lastHeartbeat: now,
	}
	if len(g.members) == 0 {
		g.protocolType = r.ProtocolType
	}
	g.members = append(g.members, m)
	g.byID[id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m
	}
	if g.leader == "" {
		g.leader = id
	}
	g.updateMember(m, r)
	if g.state != PreparingRebalance {
		g.prepareRebalance(now)
		return
	}
	g.rebalanceDeadline = maxTime(g.rebalanceDeadline, g.stateSince.Add(m.rebalanceTimeout))
	if !g.delayDeadline.IsZero() {
		// Another new member while the initial delay runs: wait a full delay
		// after it too, but never past the rebalance timeout.
		g.delayDeadline = minTime(maxTime(g.delayDeadline, now.Add(g.set.InitialRebalanceDelay)), g.rebalanceDeadline)
	}
	g.maybeCompleteJoin(now)
}

// replaceStatic hands a static member's slot to its new incarnation (a
// restarted process with the same group.instance.id): the old member id is
// fenced, the assignment kept, and a Stable group does not rebalance unless
// the protocol would change.
func (g *Group) replaceStatic(now time.Time, m *member, r JoinRequest) {
	g.answerParked(m, kerr.FencedInstanceID.Code)
	delete(g.byID, m.id)
	if g.leader == m.id {
		g.leader = r.NewMemberID
	}
	m.id = r.NewMemberID
	g.byID[m.id] = m
	m.lastHeartbeat = now
	switch g.state {
	case Stable:
		m.protocols = r.Protocols
		m.sessionTimeout, m.rebalanceTimeout = r.SessionTimeout, r.RebalanceTimeout
		m.clientID, m.clientHost = r.ClientID, r.ClientHost
		isLeader := m.id == g.leader
		if g.selectProtocol() == g.protocol && (!isLeader || r.SkipAssignmentOK) {
			// Before JoinGroup v9 a leader cannot be told to keep the
			// assignment, so it gets a rebalance instead (below).
			res := g.joinResult(m, isLeader)
			g.store(storeMetadata, []Reply{{Waiter: r.Waiter, Join: res}}, g.metadataRecord(now))
			return
		}
		g.updateMember(m, r)
		g.prepareRebalance(now)
	case CompletingRebalance:
		// The leader may already be assigning to the old member id.
		g.updateMember(m, r)
		g.prepareRebalance(now)
	default: // PreparingRebalance; Empty groups have no static members
		g.updateMember(m, r)
		g.maybeCompleteJoin(now)
	}
}

// prepareRebalance starts waiting for every member to join again.
func (g *Group) prepareRebalance(now time.Time) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncWaiter != 0 {
				g.syncError(m.syncWaiter, kerr.RebalanceInProgress.Code)
				m.syncWaiter = 0
			}
		}
	}
	wasEmpty := g.state == Empty
	g.setState(PreparingRebalance, now)
	g.rebalanceDeadline = now.Add(g.maxRebalanceTimeout())
	g.delayDeadline = time.Time{}
	if wasEmpty && g.set.InitialRebalanceDelay > 0 {
		g.delayDeadline = minTime(now.Add(g.set.InitialRebalanceDelay), g.rebalanceDeadline)
	}
	g.maybeCompleteJoin(now)
}

func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWaiter == 0 {
			return false
		}
	}
	return true
}

// maybeCompleteJoin ends PreparingRebalance once every member has joined (or
// the rebalance timeout passed), but not before the initial delay.
func (g *Group) maybeCompleteJoin(now time.Time) {
	if g.state != PreparingRebalance {
		return
	}
	if !g.delayDeadline.IsZero() {
		if now.Before(g.delayDeadline) {
			return
		}
		g.delayDeadline = time.Time{}
	}
	if g.allJoined() || !now.Before(g.rebalanceDeadline) {
		g.completeJoin(now)
	}
}

func (g *Group) completeJoin(now time.Time) {
	for _, m := range append([]*member(nil), g.members...) {
		if m.joinWaiter == 0 && m.instanceID == "" {
			// A dynamic member that did not rejoin in time is gone; a
			// static one keeps its slot until its session expires.
			g.dropMember(m, kerr.UnknownMemberID.Code)
		}
	}
	if len(g.members) == 0 {
		g.becomeEmpty(now)
		return
	}
	if !g.electJoinedLeader() {
		// Only static members that did not rejoin are left: nobody can
		// assign. Wait another rebalance timeout; their sessions expire.
		g.rebalanceDeadline = now.Add(g.maxRebalanceTimeout())
		return
	}
	g.generation++
	g.protocol = g.selectProtocol()
	g.setState(CompletingRebalance, now)
	g.syncDeadline = now.Add(g.maxRebalanceTimeout())
	for _, m := range g.members {
		if m.joinWaiter != 0 {
			g.reply(m.joinWaiter, 0, g.joinResult(m, false), nil)
			m.joinWaiter = 0
		}
	}
}

// electJoinedLeader keeps the leader if it rejoined, else picks the first
// member that did. It reports whether there is one.
func (g *Group) electJoinedLeader() bool {
	if m := g.byID[g.leader]; m != nil && m.joinWaiter != 0 {
		return true
	}
	for _, m := range g.members {
		if m.joinWaiter != 0 {
			g.leader = m.id
			return true
		}
	}
	return false
}

// becomeEmpty ends a generation with no members. The group stays Empty,
// with or without offsets, as Kafka keeps it: listed, describable and
// deletable until offsets.retention after it emptied (Tick forgets it then).
func (g *Group) becomeEmpty(now time.Time) {
	g.generation++
	g.protocol = ""
	g.leader = ""
	g.setState(Empty, now)
	g.store(storeMetadata, nil, g.metadataRecord(now))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
