package cluster

import (
	"cmp"
	"maps"
	"slices"

	"github.com/google/uuid"
)

// NoLeader is a partition's leader when it has none (offline).
const NoLeader int32 = -1

// Broker is one registered broker, as of its latest incarnation.
type Broker struct {
	ID          int32     `json:"id"`
	Incarnation uuid.UUID `json:"incarnation"`
	// Epoch is the log offset of the registration: it grows with every
	// process start, so a request carrying an older one is from a process
	// that is gone.
	Epoch int64  `json:"epoch"`
	Host  string `json:"host"`
	Port  int32  `json:"port"`
	Rack  string `json:"rack,omitempty"`
	// LogDir is the id of its data directory (RegisterBroker.LogDir).
	LogDir uuid.UUID `json:"logDir,omitempty"`
	// Fenced brokers lead nothing and join no ISR: the state of a broker
	// that has not caught up since it registered, or missed its session.
	Fenced bool `json:"fenced"`
	// ShuttingDown: a controlled shutdown is under way; the broker is
	// neither elected nor added to an ISR.
	ShuttingDown bool `json:"shuttingDown,omitempty"`
}

// Active reports whether the broker may lead and join ISRs.
func (b *Broker) Active() bool { return !b.Fenced && !b.ShuttingDown }

// Partition is one partition's replicas and leadership.
type Partition struct {
	// Replicas, the first being the preferred leader.
	Replicas []int32 `json:"replicas"`
	// ISR are the in-sync replicas: the leader among them.
	ISR []int32 `json:"isr"`
	// ELR are eligible leader replicas (KIP-966): members that left the ISR
	// while it was below min.insync.replicas, so they hold everything
	// committed up to then and may still be elected cleanly.
	ELR            []int32 `json:"elr,omitempty"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	PartitionEpoch int32   `json:"partitionEpoch"`
	// AddingReplicas and RemovingReplicas are set while a reassignment
	// (KIP-455) moves the partition: Replicas is then the union of the
	// target (first, in its order) and the original replicas, Adding the
	// target's replicas the original lacks, Removing the original's the
	// target lacks. Both are empty when no reassignment is in progress.
	AddingReplicas   []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32 `json:"removingReplicas,omitempty"`
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// Target is the replica set p is moving to (its replicas when no
// reassignment is in progress).
func (p Partition) Target() []int32 { return without(p.Replicas, p.RemovingReplicas...) }

// Original is the replica set p had before the reassignment in progress
// (its replicas when none is), in the order of Replicas: the order it had
// is not kept.
func (p Partition) Original() []int32 { return without(p.Replicas, p.AddingReplicas...) }

// Clone returns a deep copy.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ELR = slices.Clone(p.ELR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	return p
}

// Topic is one topic and its partitions.
type Topic struct {
	Name       string            `json:"name"`
	ID         uuid.UUID         `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`
}

// Config is the topic's effective value of a config: its own setting, or
// def when it has none.
func (t *Topic) Config(key, def string) string {
	if v, ok := t.Configs[key]; ok {
		return v
	}
	return def
}

// Metadata is an immutable image of the cluster's metadata as of Offset,
// the log offset of the last batch applied. Never modify what its methods
// return.
type Metadata struct {
	offset         uint64
	clusterID      string
	brokers        map[int32]*Broker
	topics         map[uuid.UUID]*Topic
	names          map[string]uuid.UUID
	nextProducerID int64
	// clusterConfigs are the dynamic cluster-wide broker configs (the
	// broker resource named ""): defaults that override the controller's
	// static Settings (see Settings.Dynamic).
	clusterConfigs map[string]string
	// brokerConfigs are the dynamic configs of one broker (the broker
	// resource named by its id): only the throttle rates (throttle.go).
	brokerConfigs map[int32]map[string]string
}

// Empty is the image before the first record.
func Empty() *Metadata {
	return &Metadata{brokers: map[int32]*Broker{}, topics: map[uuid.UUID]*Topic{}, names: map[string]uuid.UUID{}}
}

// Offset is the log offset of the last applied batch (0: none).
func (m *Metadata) Offset() uint64 { return m.offset }

// ClusterID is the id the bootstrap record set ("" before it).
func (m *Metadata) ClusterID() string { return m.clusterID }

// NextProducerID is the first producer id not handed out yet.
func (m *Metadata) NextProducerID() int64 { return m.nextProducerID }

// Broker returns the broker with id.
func (m *Metadata) Broker(id int32) (*Broker, bool) {
	b, ok := m.brokers[id]
	return b, ok
}

// Brokers lists every registered broker by id.
func (m *Metadata) Brokers() []*Broker {
	return sortedValues(m.brokers, func(a, b *Broker) int { return cmp.Compare(a.ID, b.ID) })
}

// ActiveBrokers lists the brokers that are neither fenced nor shutting
// down, by id.
func (m *Metadata) ActiveBrokers() []*Broker {
	var out []*Broker
	for _, b := range m.Brokers() {
		if b.Active() {
			out = append(out, b)
		}
	}
	return out
}

// Topic returns the topic called name.
func (m *Metadata) Topic(name string) (*Topic, bool) {
	id, ok := m.names[name]
	if !ok {
		return nil, false
	}
	return m.topics[id], true
}

// TopicByID returns the topic with id.
func (m *Metadata) TopicByID(id uuid.UUID) (*Topic, bool) {
	t, ok := m.topics[id]
	return t, ok
}

// Topics lists every topic by name.
func (m *Metadata) Topics() []*Topic {
	return sortedValues(m.topics, func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) })
}

// ClusterConfigs are the dynamic cluster-wide broker configs set, by name.
// Never modify the map.
func (m *Metadata) ClusterConfigs() map[string]string { return m.clusterConfigs }

// TopicCount is the number of topics.
func (m *Metadata) TopicCount() int { return len(m.topics) }

// isActive reports whether broker id is registered and active.
func (m *Metadata) isActive(id int32) bool {
	b, ok := m.brokers[id]
	return ok && b.Active()
}

func sortedValues[K comparable, V any](mp map[K]V, order func(a, b V) int) []V {
	out := slices.Collect(maps.Values(mp))
	slices.SortFunc(out, order)
	return out
}

// clone is a shallow copy whose maps may be changed: Apply's draft.
func (m *Metadata) clone() *Metadata {
	c := *m
	c.brokers = maps.Clone(m.brokers)
	c.topics = maps.Clone(m.topics)
	c.names = maps.Clone(m.names)
	return &c
}
