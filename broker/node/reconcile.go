package node

import (
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// Reconciler makes a broker hold what the metadata says: every partition
// it is a replica of open, as leader or follower at the partition's leader
// epoch; the partitions it no longer holds removed. It plans from an image
// and the broker's standing; the driver carries the plan out (Apply for
// each partition to set up, Manager.Remove for each to drop) and reports it
// done, so that the next plan costs only what changed: a topic whose
// description is the same value as last time (images share what they did
// not change), under the same standing, is skipped.
//
// Two rules keep a stale image from doing harm. A partition is led only
// while the image shows this broker registered with its current epoch and
// unfenced: a restarted broker leads nothing before the controller has seen
// it catch up. And a partition is removed only once the image holds this
// broker's current registration: an image older than that may predate the
// topic's creation, never its deletion.
//
// One driver goroutine at a time.
type Reconciler struct {
	self   int32
	minISR func(*cluster.Metadata, *cluster.Topic) int
	last   reconciled
}

// reconciled is what the reconciler applied last.
type reconciled struct {
	topics   map[uuid.UUID]*cluster.Topic
	lead     bool
	epoch    int64
	eligible []replication.ISRMember
	// defaults are the image's cluster-wide dynamic configs: a topic that
	// falls back to them changes when they do.
	defaults map[string]string
}

// NewReconciler is the reconciler of broker self; minISR is the
// min.insync.replicas of a topic in an image
// (cluster.Settings.Dynamic(img).MinISR).
func NewReconciler(self int32, minISR func(*cluster.Metadata, *cluster.Topic) int) *Reconciler {
	return &Reconciler{self: self, minISR: minISR}
}

// Standing is what the reconciler needs of the broker's lifecycle.
type Standing struct {
	Epoch  int64 // the registered broker epoch, 0 before registration
	Fenced bool
}

// Work is one partition to open here and give its role.
type Work struct {
	Topic *cluster.Topic
	Index int32
	State partition.ReplicaState
}

// Spec is the partition to open.
func (w Work) Spec() partition.Spec {
	return partition.Spec{Topic: w.Topic.Name, TopicID: w.Topic.ID, Index: w.Index, Configs: w.Topic.Configs}
}

// Key is the partition's key.
func (w Work) Key() partition.Key { return partition.Key{TopicID: w.Topic.ID, Index: w.Index} }

// Plan is what one image asks of the broker.
type Plan struct {
	Offset uint64 // the image's
	// Lead: the image shows this broker registered at its current epoch
	// and unfenced, so it may lead; Current: registered at its current
	// epoch.
	Lead, Current bool
	// Set are the partitions to open and give a role, in the image's order.
	Set []Work
	// Remove are the partitions held here that the image no longer places
	// here (only when Current).
	Remove []partition.Key
	// Deleted are the names of topics gone since the last plan (or taken
	// by a new topic of the same name): what was committed for them, such
	// as consumer group offsets, goes too.
	Deleted []string

	next reconciled
}

// Plan is what img asks of a broker of standing st that holds the
// partitions held.
func (r *Reconciler) Plan(img *cluster.Metadata, st Standing, held []partition.Key, now time.Time) Plan {
	me, ok := img.Broker(r.self)
	current := ok && st.Epoch != 0 && me.Epoch == st.Epoch
	lead := current && !me.Fenced
	eligible := Eligible(img)
	p := Plan{Offset: img.Offset(), Lead: lead, Current: current}
	p.next = reconciled{topics: make(map[uuid.UUID]*cluster.Topic, img.TopicCount()), lead: lead, epoch: st.Epoch,
		eligible: eligible, defaults: img.ClusterConfigs()}
	last := r.last
	sameDefaults := maps.Equal(last.defaults, p.next.defaults)
	wanted := map[partition.Key]bool{}
	for _, t := range img.Topics() {
		p.next.topics[t.ID] = t
		same := last.topics[t.ID] == t && last.lead == lead && last.epoch == st.Epoch && slices.Equal(last.eligible, eligible) && sameDefaults
		for i, part := range t.Partitions {
			if !slices.Contains(part.Replicas, r.self) {
				continue
			}
			w := Work{Topic: t, Index: int32(i), State: partition.ReplicaState{
				Self: r.self, BrokerEpoch: st.Epoch, Lead: lead, Leader: part.Leader,
				LeaderEpoch: part.LeaderEpoch, PartitionEpoch: part.PartitionEpoch,
				Replicas: part.Replicas, ISR: part.ISR, ELR: part.ELR,
				MinISR: r.minISR(img, t), Eligible: eligible, Now: now,
			}}
			wanted[w.Key()] = true
			if !same {
				p.Set = append(p.Set, w)
			}
		}
	}
	if current {
		for _, k := range held {
			if !wanted[k] {
				p.Remove = append(p.Remove, k)
			}
		}
	}
	for id, t := range last.topics {
		if nt, ok := p.next.topics[id]; !ok || nt.Name != t.Name {
			p.Deleted = append(p.Deleted, t.Name)
		}
	}
	slices.Sort(p.Deleted)
	return p
}

// Done records that p was carried out.
func (r *Reconciler) Done(p Plan) { r.last = p.next }

// Ensurer opens partitions (a partition.Manager).
type Ensurer interface {
	Ensure(partition.Spec) (*partition.Partition, error)
}

// Apply opens w's partition and gives it its role; changed reports that
// the role changed (the partition's follower must fetch from its leader,
// FetchLeader).
func Apply(m Ensurer, w Work) (p *partition.Partition, changed bool, err error) {
	p, err = m.Ensure(w.Spec())
	if err != nil {
		return nil, false, err
	}
	changed, err = p.SetState(w.State)
	return p, changed, err
}

// FetchLeader is the broker w's partition fetches from: its leader, or
// nobody (-1) when that is this broker or there is none.
func FetchLeader(w Work) int32 {
	if w.State.Leader == w.State.Self {
		return -1
	}
	return w.State.Leader
}

// Eligible lists the brokers that may join an ISR (registered, unfenced,
// not shutting down) with their epochs, by id.
func Eligible(img *cluster.Metadata) []replication.ISRMember {
	var out []replication.ISRMember
	for _, b := range img.ActiveBrokers() {
		out = append(out, replication.ISRMember{ID: b.ID, BrokerEpoch: b.Epoch})
	}
	return out
}
