package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is where a group stands in the classic rebalance protocol.
type State int8

const (
	// Empty: no members; the group may still hold committed offsets.
	Empty State = iota
	// PreparingRebalance: waiting for every member to (re)send JoinGroup.
	PreparingRebalance
	// CompletingRebalance: JoinGroup answered; waiting for the leader's
	// assignment in SyncGroup.
	CompletingRebalance
	// Stable: every member has its assignment; heartbeats keep it so.
	Stable
	// Dead: the group is gone (deleted, or emptied with nothing to keep).
	// A request that finds a Dead group looks the group up again.
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String returns the name Kafka uses in DescribeGroups and ListGroups.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the inverse of String (case-insensitive, as Kafka's
// ListGroups states filter).
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if bytes.EqualFold([]byte(n), []byte(s)) {
			return State(i), true
		}
	}
	return 0, false
}

// Waiter names a request parked in the state machine (a JoinGroup waiting
// for the rebalance to complete, a SyncGroup waiting for the leader). The
// shell hands out non-zero values; the machine answers each exactly once,
// through a Reply in Ready.
type Waiter uint64

// Protocol is one assignment protocol a member supports, with its metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// Settings are the limits and delays a group applies. See Config for the
// defaults and why they were chosen.
type Settings struct {
	InitialRebalanceDelay time.Duration
	MinSessionTimeout     time.Duration
	MaxSessionTimeout     time.Duration
	MaxMembers            int
	MaxMetadataBytes      int
	// OffsetsRetention: offsets of an Empty group expire this long after it
	// became Empty (or after their commit, if later). Zero: never.
	OffsetsRetention time.Duration
}

type member struct {
	id               string
	instanceID       string // "" for a dynamic member
	clientID         string
	clientHost       string
	protocols        []Protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	assignment       []byte
	lastHeartbeat    time.Time
	joinWaiter       Waiter // non-zero while a JoinGroup is parked
	syncWaiter       Waiter // non-zero while a SyncGroup is parked
}

func (m *member) sameProtocols(ps []Protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// JoinResult is the body of a JoinGroup answer.
type JoinResult struct {
	MemberID       string
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	SkipAssignment bool
	// Members is filled for the leader only: every member with its metadata
	// for the selected protocol, in join order.
	Members []JoinedMember
}

// JoinedMember is one member as the leader sees it in JoinGroup.
type JoinedMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// SyncResult is the body of a SyncGroup answer.
type SyncResult struct {
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Reply answers a parked request. Code is a Kafka error code (0 = none);
// Join or Sync is set for those requests (also on errors, e.g. the member id
// handed out with MEMBER_ID_REQUIRED); both are nil for a plain answer such as
// DeleteGroups.
type Reply struct {
	Waiter Waiter
	Code   int16
	Join   *JoinResult
	Sync   *SyncResult
}

// Record is one key/value for __consumer_offsets; a nil Value is a
// tombstone.
type Record struct {
	Key, Value []byte
}

type storeKind int8

const (
	storeMetadata storeKind = iota // group metadata only: nothing to undo on failure
	storeSync                      // leader's assignment: a failure sends the group back to rebalance
	storeDelete                    // tombstones of a deleted group
)

// Store is an obligation: write Records to __consumer_offsets (in the order
// the stores were emitted), wait until durable, then deliver Replies. If the
// write fails, call StoreFailed with it and deliver each Reply with the
// failure's code instead.
type Store struct {
	Records    []Record
	Replies    []Reply
	kind       storeKind
	generation int32
}

// Ready is what a step of the machine asks of its caller: deliver Replies
// now, perform Stores (see Store).
type Ready struct {
	Replies []Reply
	Stores  []Store
}

// Group is one consumer group's state machine. It does no I/O, starts no
// goroutines and reads no clock: time comes in as the now argument of each
// step, and obligations go out through Ready. Not safe for concurrent use:
// the caller serialises steps.
type Group struct {
	id  string
	set Settings

	state        State
	stateSince   time.Time
	protocolType string
	protocol     string
	generation   int32
	leader       string

	members []*member          // join order: leader election and the leader's member list
	byID    map[string]*member // same members by member id
	static  map[string]*member // same members by group.instance.id
	pending map[string]time.Time

	rebalanceDeadline time.Time // PreparingRebalance: stop waiting for members
	delayDeadline     time.Time // PreparingRebalance from Empty: group.initial.rebalance.delay
	syncDeadline      time.Time // CompletingRebalance: stop waiting for SyncGroups

	offsets   map[TopicPartition]Offset
	inflight  map[TopicPartition]int // commits appended but not yet durable
	persisted bool                   // a metadata record was ever written or loaded
	// txnOffsets are the offsets committed in transactions not decided
	// yet, by producer id (txn.go).
	txnOffsets map[int64]map[TopicPartition]Offset

	ready Ready
}

// NewGroup returns an Empty group.
func NewGroup(id string, set Settings, now time.Time) *Group {
	return &Group{
		id:         id,
		set:        set,
		stateSince: now,
		byID:       map[string]*member{},
		static:     map[string]*member{},
		pending:    map[string]time.Time{},
		offsets:    map[TopicPartition]Offset{},
		inflight:   map[TopicPartition]int{},
	}
}

// ID returns the group id.
func (g *Group) ID() string { return g.id }

// State returns the group's state.
func (g *Group) State() State { return g.state }

// Generation returns the current generation id.
func (g *Group) Generation() int32 { return g.generation }

// Ready returns the obligations accumulated since the last call and resets
// them. The caller must deliver every Reply and perform every Store.
func (g *Group) Ready() Ready {
	rd := g.ready
	g.ready = Ready{}
	return rd
}

// Disposable reports whether the group holds nothing worth keeping: Empty,
// no members or pending members, no offsets, never persisted. The shell drops
// such groups (for example one created by a JoinGroup that failed).
func (g *Group) Disposable() bool {
	return g.state == Dead || (g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && len(g.inflight) == 0 && len(g.txnOffsets) == 0 && !g.persisted)
}

func (g *Group) reply(w Waiter, code int16, join *JoinResult, sync *SyncResult) {
	if w == 0 {
		return
	}
	g.ready.Replies = append(g.ready.Replies, Reply{Waiter: w, Code: code, Join: join, Sync: sync})
}

func (g *Group) joinError(w Waiter, memberID string, code int16) {
	g.reply(w, code, &JoinResult{MemberID: memberID, Generation: -1}, nil)
}

func (g *Group) syncError(w Waiter, code int16) {
	g.reply(w, code, nil, &SyncResult{})
}

// answerParked answers m's parked join and sync requests, if any, with
// code.
func (g *Group) answerParked(m *member, code int16) {
	if m.joinWaiter != 0 {
		g.joinError(m.joinWaiter, m.id, code)
		m.joinWaiter = 0
	}
	if m.syncWaiter != 0 {
		g.syncError(m.syncWaiter, code)
		m.syncWaiter = 0
	}
}

func (g *Group) setState(s State, now time.Time) {
	g.state = s
	g.stateSince = now
}

// dropMember removes m without any state transition, answering its parked
// requests with code.
func (g *Group) dropMember(m *member, code int16) {
	g.answerParked(m, code)
	g.members = slices.DeleteFunc(g.members, func(o *member) bool { return o == m })
	delete(g.byID, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
}

// removeMember removes m and moves the group on: a rebalance if it was
// settled, or a completion check if one is under way.
func (g *Group) removeMember(now time.Time, m *member) {
	g.dropMember(m, kerr.UnknownMemberID.Code)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	}
}

// fenced reports whether instanceID belongs to a member other than memberID
// (a newer incarnation of a static member replaced it).
func (g *Group) fenced(memberID, instanceID string) bool {
	if instanceID == "" {
		return false
	}
	m := g.static[instanceID]
	return m != nil && m.id != memberID
}

func (g *Group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols is Kafka's rule for admitting a JoinGroup: the protocol
// type matches and at least one protocol is supported by every member.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	common := g.commonProtocols()
	for _, p := range ps {
		if slices.Contains(common, p.Name) {
			return true
		}
	}
	return false
}

// commonProtocols lists the protocols every member supports, in the first
// member's order of preference.
func (g *Group) commonProtocols() []string {
	if len(g.members) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[0].protocols {
		all := true
		for _, m := range g.members[1:] {
			if !hasProtocol(m.protocols, p.Name) {
				all = false
				break
			}
		}
		if all && !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

// selectProtocol is Kafka's vote: each member votes for the first protocol
// in its own preference order that every member supports; most votes wins,
// ties go to the earlier protocol in the first member's order.
func (g *Group) selectProtocol() string {
	common := g.commonProtocols()
	if len(common) == 0 {
		// Joins are admitted only when they share a protocol with every
		// member, so this needs members loaded from an inconsistent log.
		if len(g.members) > 0 && len(g.members[0].protocols) > 0 {
			return g.members[0].protocols[0].Name
		}
		return ""
	}
	votes := make([]int, len(common))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if i := slices.Index(common, p.Name); i >= 0 {
				votes[i]++
				break
			}
		}
	}
	best := 0
	for i := range votes {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return common[best]
}

func (g *Group) joinResult(m *member, skip bool) *JoinResult {
	r := &JoinResult{
		MemberID:       m.id,
		Generation:     g.generation,
		ProtocolType:   g.protocolType,
		Protocol:       g.protocol,
		Leader:         g.leader,
		SkipAssignment: skip,
	}
	if m.id == g.leader {
		r.Members = make([]JoinedMember, 0, len(g.members))
		for _, o := range g.members {
			r.Members = append(r.Members, JoinedMember{
				MemberID:   o.id,
				InstanceID: o.instanceID,
				Metadata:   o.metadataFor(g.protocol),
			})
		}
	}
	return r
}
