package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Settings are the broker-wide defaults the controller decides with.
type Settings struct {
	// MinInsyncReplicas is min.insync.replicas for topics that do not set it.
	MinInsyncReplicas int
	// UncleanLeaderElection is unclean.leader.election.enable for topics
	// that do not set it: a replica outside the ISR and ELR may lead,
	// losing what it lacks. Off by default, as in Kafka.
	UncleanLeaderElection bool
	// DefaultPartitions and DefaultReplicationFactor serve requests that
	// ask for the default (-1) and auto-created topics.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// MaxPartitions bounds one topic's partition count.
	MaxPartitions int32
	// ProducerIDBlock is how many producer ids a broker gets at once.
	ProducerIDBlock int64

	mut mutations // test-only; see mutations.go
}

// elr reports whether eligible leader replicas (KIP-966) are kept.
func (s Settings) elr() bool { return !s.mut.has(MutationNoELR) }

// Defaults for the zero fields of Settings.
const (
	DefaultMaxPartitions   = 10000
	DefaultProducerIDBlock = 1000
)

// WithDefaults fills the zero fields.
func (s Settings) WithDefaults() Settings {
	if s.MinInsyncReplicas <= 0 {
		s.MinInsyncReplicas = 1
	}
	if s.DefaultPartitions <= 0 {
		s.DefaultPartitions = 1
	}
	if s.DefaultReplicationFactor <= 0 {
		s.DefaultReplicationFactor = 1
	}
	if s.MaxPartitions <= 0 {
		s.MaxPartitions = DefaultMaxPartitions
	}
	if s.ProducerIDBlock <= 0 {
		s.ProducerIDBlock = DefaultProducerIDBlock
	}
	return s
}

// MinISR is t's effective min.insync.replicas.
func (s Settings) MinISR(t *Topic) int {
	n, err := strconv.Atoi(t.Config(ConfigMinInsyncReplicas, strconv.Itoa(s.MinInsyncReplicas)))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Unclean is t's effective unclean.leader.election.enable.
func (s Settings) Unclean(t *Topic) bool {
	return t.Config(ConfigUncleanLeaderElection, strconv.FormatBool(s.UncleanLeaderElection)) == "true"
}

// Register decides a broker's registration. alive says whether the
// broker's current registration still has a live session (heartbeats
// within the session timeout): a second process claiming a live broker's id
// is refused with DUPLICATE_BROKER_REGISTRATION, unless that registration
// is in a controlled shutdown: its process said it is leaving, and the
// restart that follows a SIGTERM must not wait out the session timeout. A
// restart of a registered broker first fences the old incarnation, moving
// its leaderships. A repeated request of the same incarnation (a retry)
// changes nothing.
func (s Settings) Register(m *Metadata, clusterID string, r RegisterBroker, alive bool) ([]Record, error) {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	if clusterID != m.ClusterID() {
		return nil, fmt.Errorf("broker %d is of cluster %q, this is %q: %w", r.ID, clusterID, m.ClusterID(), kerr.InconsistentClusterID)
	}
	old, ok := m.Broker(r.ID)
	if ok && old.Incarnation == r.Incarnation {
		return nil, nil
	}
	if ok && alive && !old.Fenced && !old.ShuttingDown {
		return nil, fmt.Errorf("broker %d is registered by a live process (incarnation %s): %w", r.ID, old.Incarnation, kerr.DuplicateBrokerRegistration)
	}
	// A broker back from an unclean shutdown may have lost what it had not
	// synced, and one on another disk everything: it leaves every ELR
	// (KIP-966), and, if its old registration was still unfenced, every
	// ISR as a fenced broker does. One that acknowledges only what it has
	// synced, back on the disk it had, lost nothing it was counted in sync
	// for, and stays (stronger than Kafka, which acknowledges from page
	// cache). So does one back on its disk in the ELR of a partition it is
	// the only replica of: no other copy can hold more than it kept, and
	// without it the partition would wait for an unclean election forever.
	sameDisk := ok && old.LogDir == r.LogDir
	kept := sameDisk && (r.CleanShutdown || r.DurableAcks)
	var dropELR func(Partition) bool
	if ok && !kept && !s.mut.has(MutationUncleanShutdownInELR) {
		dropELR = func(p Partition) bool { return !sameDisk || !slices.Equal(p.Replicas, []int32{r.ID}) }
	}
	var recs []Record
	if ok && !old.Fenced {
		recs = s.fence(m, r.ID, dropELR)
	} else if dropELR != nil {
		recs = s.leave(m, r.ID, m.isActive, false, dropELR)
	}
	rr := r
	return append(recs, Record{RegisterBroker: &rr}), nil
}

// Fence fences broker id: it leaves every ISR (into the ELR where KIP-966
// says so), and the partitions it led elect another leader or go offline.
func (s Settings) Fence(m *Metadata, id int32) []Record { return s.Dynamic(m).fence(m, id, nil) }

// fence is Fence, taking the broker out of the ELR of the partitions
// dropELR (when not nil) reports.
func (s Settings) fence(m *Metadata, id int32, dropELR func(Partition) bool) []Record {
	b, ok := m.Broker(id)
	if !ok || b.Fenced {
		return nil
	}
	recs := []Record{{FenceBroker: &BrokerRef{ID: id, Epoch: b.Epoch}}}
	active := func(r int32) bool { return r != id && m.isActive(r) }
	return append(recs, s.leave(m, id, active, false, dropELR)...)
}

// Shutdown starts broker id's controlled shutdown: its leaderships move to
// other in-sync replicas where there is one, and it leaves the ISRs it can
// leave without making a partition lose its only leader, so that it exits
// leading as little as possible.
func (s Settings) Shutdown(m *Metadata, id int32) []Record {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	b, ok := m.Broker(id)
	if !ok || b.ShuttingDown {
		return nil
	}
	recs := []Record{{ShutdownBroker: &BrokerRef{ID: id, Epoch: b.Epoch}}}
	active := func(r int32) bool { return r != id && m.isActive(r) }
	return append(recs, s.leave(m, id, active, true, nil)...)
}

// leave removes id from every ISR it is in and re-elects the partitions it
// led; it also leaves the ELR of the partitions dropELR (when not nil)
// reports. keepSole keeps it as leader (and in the ISR) of partitions
// nobody else can lead.
func (s Settings) leave(m *Metadata, id int32, active func(int32) bool, keepSole bool, dropELR func(Partition) bool) []Record {
	var recs []Record
	for _, t := range m.Topics() {
		for i, p := range t.Partitions {
			inISR := slices.Contains(p.ISR, id)
			drop := dropELR != nil && dropELR(p)
			if !inISR && !(drop && slices.Contains(p.ELR, id)) {
				continue
			}
			n := p.Clone()
			if inISR {
				n = withISR(p, without(p.ISR, id), s.MinISR(t), s.elr())
			}
			if drop {
				n.ELR = without(n.ELR, id)
			}
			if inISR && (p.Leader == id || p.Leader == NoLeader) {
				leader, kind := electLeader(n, active, s.Unclean(t))
				if kind == electNone && keepSole {
					continue
				}
				n = withLeader(n, leader, kind)
			}
			if st, changed := next(p, n); changed {
				recs = append(recs, change(t, i, st))
			}
		}
	}
	return recs
}

// Unfence unfences broker id, which has caught up with the metadata since
// it registered, and elects it where a partition has no leader and it is
// eligible.
func (s Settings) Unfence(m *Metadata, id int32) []Record {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	b, ok := m.Broker(id)
	if !ok || !b.Fenced {
		return nil
	}
	recs := []Record{{UnfenceBroker: &BrokerRef{ID: id, Epoch: b.Epoch}}}
	active := func(r int32) bool { return r == id && !b.ShuttingDown || m.isActive(r) }
	return append(recs, s.electOffline(m, active)...)
}

// electOffline elects a leader for every partition that has none and an
// eligible replica among those active says may lead.
func (s Settings) electOffline(m *Metadata, active func(int32) bool) []Record {
	var recs []Record
	for _, t := range m.Topics() {
		for i, p := range t.Partitions {
			if p.Leader != NoLeader {
				continue
			}
			leader, kind := electLeader(p, active, s.Unclean(t))
			if kind == electNone {
				continue
			}
			if st, changed := next(p, withLeader(p, leader, kind)); changed {
				recs = append(recs, change(t, i, st))
			}
		}
	}
	return recs
}

// Rebalance moves each partition's leadership back to its preferred
// replica (the first) when that one is active and in the ISR, and elects
// leaders for partitions that have none but could: the controller runs it
// periodically, so a broker that recovered gets its leaderships back.
func (s Settings) Rebalance(m *Metadata) []Record {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	recs := s.electOffline(m, m.isActive)
	if len(recs) > 0 {
		return recs // one step at a time: the next run sees these applied
	}
	for _, t := range m.Topics() {
		for i, p := range t.Partitions {
			if p.Leader == NoLeader {
				continue
			}
			if rec, err := preferred(m, t, i); err == nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// ElectOffline elects a leader for every partition that has none and an
// eligible replica: the part of Rebalance that runs when automatic
// preferred-leader balancing is off (an unclean.leader.election.enable
// set live is read here).
func (s Settings) ElectOffline(m *Metadata) []Record {
	return s.Dynamic(m).electOffline(m, m.isActive)
}

func change(t *Topic, i int, st Partition) Record {
	return Record{ChangePartition: &ChangePartition{TopicID: t.ID, Partition: int32(i), State: st}}
}

// NewTopic is a CreateTopics request for one topic.
type NewTopic struct {
	Name              string
	Partitions        int32 // -1: the default
	ReplicationFactor int16 // -1: the default
	// Assignment, when set, gives each partition's replicas and replaces
	// Partitions and ReplicationFactor.
	Assignment [][]int32
	Configs    map[string]*string
}

// CreateTopic decides the creation of a topic: checks, an id and the
// placement of its replicas over the active brokers. Errors wrap kerr
// values: INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS,
// INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
// INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG.
func (s Settings) CreateTopic(m *Metadata, nt NewTopic, rnd *rand.Rand) (Record, error) {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	if err := ValidTopicName(nt.Name); err != nil {
		return Record{}, err
	}
	if _, ok := m.Topic(nt.Name); ok {
		return Record{}, fmt.Errorf("topic %q: %w", nt.Name, kerr.TopicAlreadyExists)
	}
	for _, t := range m.Topics() {
		if confusable(t.Name) == confusable(nt.Name) {
			return Record{}, fmt.Errorf("topic %q collides with existing topic %q ('.' and '_' are confusable): %w",
				nt.Name, t.Name, kerr.InvalidTopicException)
		}
	}
	configs, err := ValidateConfigs(nt.Configs)
	if err != nil {
		return Record{}, fmt.Errorf("topic %q: %w", nt.Name, err)
	}
	assignment := nt.Assignment
	if len(assignment) > 0 {
		if err := s.checkAssignment(m, assignment); err != nil {
			return Record{}, fmt.Errorf("topic %q: %w", nt.Name, err)
		}
	} else if assignment, err = s.placement(m, nt.Name, nt.Partitions, nt.ReplicationFactor, rnd); err != nil {
		return Record{}, err
	}
	t := &Topic{Name: nt.Name, Configs: configs}
	if rf := len(assignment[0]); s.MinISR(t) > rf {
		return Record{}, fmt.Errorf("topic %q: min.insync.replicas %d above the replication factor %d: %w",
			nt.Name, s.MinISR(t), rf, kerr.InvalidConfig)
	}
	id, err := uuid.NewRandomFromReader(randReader{rnd})
	if err != nil {
		return Record{}, fmt.Errorf("topic %q: id: %w", nt.Name, err)
	}
	ct := &CreateTopic{Name: nt.Name, ID: id, Configs: configs}
	for _, replicas := range assignment {
		ct.Partitions = append(ct.Partitions, s.initial(m, replicas))
	}
	return Record{CreateTopic: ct}, nil
}

// placement places partitions x rf replicas over the active brokers.
func (s Settings) placement(m *Metadata, name string, partitions int32, rf int16, rnd *rand.Rand) ([][]int32, error) {
	if partitions == -1 {
		partitions = s.DefaultPartitions
	}
	if rf == -1 {
		rf = s.DefaultReplicationFactor
	}
	if partitions < 1 || partitions > s.MaxPartitions {
		return nil, fmt.Errorf("topic %q: %d partitions, want 1 to %d: %w", name, partitions, s.MaxPartitions, kerr.InvalidPartitions)
	}
	live := m.ActiveBrokers()
	if rf < 1 || int(rf) > len(live) {
		return nil, fmt.Errorf("topic %q: replication factor %d, and %d brokers are available: %w", name, rf, len(live), kerr.InvalidReplicationFactor)
	}
	return place(live, int(partitions), int(rf), rnd), nil
}

// checkAssignment accepts a manual assignment of registered brokers, every
// partition with the same number of distinct replicas.
func (s Settings) checkAssignment(m *Metadata, as [][]int32) error {
	if len(as) > int(s.MaxPartitions) {
		return fmt.Errorf("%d partitions, at most %d: %w", len(as), s.MaxPartitions, kerr.InvalidPartitions)
	}
	for i, replicas := range as {
		if len(replicas) == 0 || len(replicas) != len(as[0]) {
			return fmt.Errorf("partition %d has %d replicas, partition 0 %d: %w", i, len(replicas), len(as[0]), kerr.InvalidReplicaAssignment)
		}
		for j, r := range replicas {
			if _, ok := m.Broker(r); !ok || slices.Contains(replicas[:j], r) {
				return fmt.Errorf("partition %d: replica %d is unknown or repeated: %w", i, r, kerr.InvalidReplicaAssignment)
			}
		}
	}
	return nil
}

// initial is a new partition's state: every active replica in sync (there
// is nothing to be behind on yet), led by the first of them.
func (s Settings) initial(m *Metadata, replicas []int32) Partition {
	p := Partition{Replicas: slices.Clone(replicas), Leader: NoLeader}
	for _, r := range replicas {
		if m.isActive(r) {
			p.ISR = append(p.ISR, r)
		}
	}
	if len(p.ISR) == 0 {
		// Nobody can serve it yet; whoever is unfenced first leads.
		p.ISR = slices.Clone(replicas)
	}
	leader, kind := electLeader(p, m.isActive, false)
	return withLeader(p, leader, kind)
}

// AddPartitions decides growing topic name to total partitions.
func (s Settings) AddPartitions(m *Metadata, name string, total int32, assignment [][]int32, rnd *rand.Rand) (Record, error) {
	t, ok := m.Topic(name)
	if !ok {
		return Record{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	cur := int32(len(t.Partitions))
	if total <= cur || total > s.MaxPartitions {
		return Record{}, fmt.Errorf("topic %q has %d partitions, asked for %d (max %d): %w", name, cur, total, s.MaxPartitions, kerr.InvalidPartitions)
	}
	rf := len(t.Partitions[0].Target()) // a reassignment in progress counts as done
	if len(assignment) > 0 {
		if int32(len(assignment)) != total-cur {
			return Record{}, fmt.Errorf("topic %q: %d assignments for %d new partitions: %w", name, len(assignment), total-cur, kerr.InvalidReplicaAssignment)
		}
		if err := s.checkAssignment(m, append([][]int32{t.Partitions[0].Target()}, assignment...)); err != nil {
			return Record{}, fmt.Errorf("topic %q: %w", name, err)
		}
	} else {
		var err error
		if assignment, err = s.placement(m, name, total-cur, int16(rf), rnd); err != nil {
			return Record{}, err
		}
	}
	ap := &AddPartitions{TopicID: t.ID}
	for _, replicas := range assignment {
		ap.Partitions = append(ap.Partitions, s.initial(m, replicas))
	}
	return Record{AddPartitions: ap}, nil
}

// DeleteTopic decides deleting topic name.
func (s Settings) DeleteTopic(m *Metadata, name string) (Record, error) {
	t, ok := m.Topic(name)
	if !ok {
		return Record{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	return Record{DeleteTopic: &DeleteTopic{TopicID: t.ID}}, nil
}

// AllocateProducerIDs decides the next block of producer ids for a broker.
func (s Settings) AllocateProducerIDs(m *Metadata, broker int32, epoch int64) (Record, error) {
	b, ok := m.Broker(broker)
	switch {
	case !ok:
		return Record{}, fmt.Errorf("broker %d is not registered: %w", broker, kerr.BrokerIDNotRegistered)
	case epoch != b.Epoch:
		return Record{}, fmt.Errorf("broker %d epoch %d, registered %d: %w", broker, epoch, b.Epoch, kerr.StaleBrokerEpoch)
	}
	return Record{ProducerIDs: &ProducerIDs{Broker: broker, BrokerEpoch: epoch, First: m.NextProducerID(), Count: s.ProducerIDBlock}}, nil
}

// randReader adapts a math/rand/v2 source to io.Reader for uuid.
type randReader struct{ r *rand.Rand }

func (r randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}
