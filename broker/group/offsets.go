package group

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Offset is a committed offset.
type Offset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when the client did not say
	Metadata    string
	CommitTime  time.Time
	// pos is the __consumer_offsets offset of the record that holds it:
	// commits that become durable out of order apply in log order.
	pos int64
}

// Commit is one partition's offset in an OffsetCommit.
type Commit struct {
	TopicPartition
	Offset
}

// CheckCommit is the fencing of an OffsetCommit (Kafka's rules): a commit
// with no member id, no instance id and a negative generation comes from a
// client that manages its own partitions and is accepted only while the
// group has no members; any other must be from a current member of the
// current generation, and not while the group waits for SyncGroup. A
// member's commit also counts as a heartbeat.
func (g *Group) CheckCommit(now time.Time, memberID, instanceID string, generation int32) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && memberID == "" && instanceID == "" {
		if g.state != Empty {
			return kerr.UnknownMemberID.Code
		}
		return 0
	}
	if code := g.checkMember(memberID, instanceID, generation); code != 0 {
		return code
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	g.byID[memberID].lastHeartbeat = now
	return 0
}

// CommitStarted records that commits for tps were appended to the log and
// are waiting to become durable (a DeleteGroups meanwhile must tombstone
// them too).
func (g *Group) CommitStarted(tps []TopicPartition) {
	for _, tp := range tps {
		g.inflight[tp]++
	}
}

// CommitDone ends CommitStarted. If durable, the commits (held in the log at
// pos) become visible, unless a later record for the same partition already
// did.
func (g *Group) CommitDone(commits []Commit, pos int64, durable bool) {
	for _, c := range commits {
		if g.inflight[c.TopicPartition]--; g.inflight[c.TopicPartition] <= 0 {
			delete(g.inflight, c.TopicPartition)
		}
		if !durable || g.state == Dead {
			continue
		}
		if old, ok := g.offsets[c.TopicPartition]; ok && old.pos > pos {
			continue
		}
		o := c.Offset
		o.pos = pos
		g.offsets[c.TopicPartition] = o
	}
}

// Committed returns the committed offset of tp.
func (g *Group) Committed(tp TopicPartition) (Offset, bool) {
	o, ok := g.offsets[tp]
	return o, ok
}

// AllCommitted returns every committed offset, sorted by topic and
// partition.
func (g *Group) AllCommitted() []Commit {
	out := make([]Commit, 0, len(g.offsets))
	for tp, o := range g.offsets {
		out = append(out, Commit{TopicPartition: tp, Offset: o})
	}
	slices.SortFunc(out, func(a, b Commit) int { return compareTP(a.TopicPartition, b.TopicPartition) })
	return out
}

// expiry is when o expires in an Empty group (Kafka's KIP-211 rule): the
// retention period after the group became Empty, or after the commit for a
// later commit (a client that assigns partitions itself commits into an
// Empty group).
func (g *Group) expiry(o Offset) time.Time {
	return maxTime(g.stateSince, o.CommitTime).Add(g.set.OffsetsRetention)
}

// offsetsExpireAt is when the first offset of an Empty group expires; zero
// if none will.
func (g *Group) offsetsExpireAt() time.Time {
	var first time.Time
	if g.set.OffsetsRetention <= 0 {
		return first
	}
	for _, o := range g.offsets {
		if at := g.expiry(o); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// expireOffsets forgets, and tombstones, the offsets of an Empty group
// whose retention has passed.
func (g *Group) expireOffsets(now time.Time) {
	if g.set.OffsetsRetention <= 0 {
		return
	}
	var recs []Record
	for tp, o := range g.offsets {
		if !now.Before(g.expiry(o)) {
			recs = append(recs, Record{Key: offsetKey(g.id, tp)})
			delete(g.offsets, tp)
		}
	}
	if len(recs) > 0 {
		g.store(storeMetadata, nil, recs...)
	}
}

// DropTopic forgets the offsets committed for a deleted topic and asks for
// their tombstones.
func (g *Group) DropTopic(topic string) {
	var recs []Record
	for tp := range g.offsets {
		if tp.Topic == topic {
			recs = append(recs, Record{Key: offsetKey(g.id, tp)})
			delete(g.offsets, tp)
		}
	}
	if len(recs) > 0 {
		g.store(storeMetadata, nil, recs...)
	}
}

// Delete steps a DeleteGroups for this group: GROUP_ID_NOT_FOUND if it is
// gone, NON_EMPTY_GROUP while it has members; otherwise the group dies and
// w is answered once its tombstones are durable.
func (g *Group) Delete(now time.Time, w Waiter) {
	switch {
	case g.state == Dead:
		g.reply(w, kerr.GroupIDNotFound.Code, nil, nil)
	case g.state != Empty || len(g.members) > 0:
		g.reply(w, kerr.NonEmptyGroup.Code, nil, nil)
	default:
		g.store(storeDelete, []Reply{{Waiter: w}}, g.tombstones()...)
		g.setState(Dead, now)
	}
}

// tombstones deletes the group's metadata and every offset it has or is
// about to have.
func (g *Group) tombstones() []Record {
	tps := make([]TopicPartition, 0, len(g.offsets)+len(g.inflight))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	for tp := range g.inflight {
		if _, ok := g.offsets[tp]; !ok {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, compareTP)
	recs := make([]Record, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, Record{Key: offsetKey(g.id, tp)})
	}
	return append(recs, Record{Key: metadataKey(g.id)})
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	ID           string
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Leader       string
	Members      []MemberDescription
}

// MemberDescription is one member in a Description. Metadata and
// Assignment are filled only when the group is Stable (as Kafka does).
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe returns the group's description.
func (g *Group) Describe() Description {
	d := Description{
		ID:           g.id,
		State:        g.state,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Generation:   g.generation,
		Leader:       g.leader,
	}
	for _, m := range g.members {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == Stable {
			md.Metadata = m.metadataFor(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}
