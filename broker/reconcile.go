package broker

import (
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// The reconciler makes this broker hold what the metadata says: every
// partition it is a replica of is open, as leader or follower at the
// partition's leader epoch; partitions it no longer holds are closed and
// deleted; the group coordinators follow __consumer_offsets leadership. It
// runs on one goroutine, after every change of the metadata image and of
// the broker's own standing (registered, fenced).
//
// Two rules keep a stale image from doing harm. A partition is led only
// while the image shows this broker registered with its current epoch and
// unfenced: a restarted broker leads nothing before the controller has seen
// it catch up. And a partition is deleted only once the image holds this
// broker's current registration: an image older than that may predate the
// topic's creation, never its deletion.

// reconciled is what the reconciler applied last, so that an image that
// changed one topic costs one topic's work.
type reconciled struct {
	topics   map[uuid.UUID]*cluster.Topic
	lead     bool
	epoch    int64
	offset   uint64 // the image's
	eligible []replication.ISRMember
}

func (s *Server) reconcileLoop() {
	defer s.bg.Done()
	var last reconciled
	for {
		changed := s.store.Changed()
		s.reconcileBegan.Store(s.cfg.Clock.Now().UnixNano())
		last = s.reconcile(s.store.Image(), last)
		s.reconciled.advance(int64(last.offset))
		select {
		case <-changed:
		case <-s.kick:
		case <-s.quit:
			return
		}
	}
}

// kickReconcile makes the reconciler run again (the broker's standing
// changed, which the image alone does not say).
func (s *Server) kickReconcile() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) reconcile(img *cluster.Metadata, last reconciled) reconciled {
	self := s.cfg.NodeID
	epoch := s.life.epoch.Load()
	b, ok := img.Broker(self)
	current := ok && epoch != 0 && b.Epoch == epoch
	lead := current && !b.Fenced
	next := reconciled{topics: make(map[uuid.UUID]*cluster.Topic, img.TopicCount()), lead: lead, epoch: epoch, offset: img.Offset()}
	wanted := map[partition.Key]bool{}
	var work []func()
	eligible := eligibleOf(img)
	next.eligible = eligible
	for _, t := range img.Topics() {
		next.topics[t.ID] = t
		same := last.topics[t.ID] == t && last.lead == lead && last.epoch == epoch && slices.Equal(last.eligible, eligible)
		for i, p := range t.Partitions {
			if !slices.Contains(p.Replicas, self) {
				continue
			}
			k := partition.Key{TopicID: t.ID, Index: int32(i)}
			wanted[k] = true
			if same {
				continue
			}
			st := partition.ReplicaState{
				Self: self, BrokerEpoch: epoch, Lead: lead, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Replicas: p.Replicas, ISR: p.ISR, ELR: p.ELR,
				MinISR: s.ctl.Settings().MinISR(t), Eligible: eligible, Now: s.cfg.Clock.Now(),
			}
			work = append(work, func() { s.reconcilePartition(t, int32(i), p, st) })
		}
	}
	began := s.cfg.Clock.Now()
	runAll(work, reconcileWorkers)
	if len(work) >= reconcileLogAt {
		took := s.cfg.Clock.Now().Sub(began)
		s.log.Info("partitions set up", "partitions", len(work), "lead", lead, "took", took.Round(time.Millisecond))
	}
	if current {
		for _, k := range s.parts.Keys() {
			if !wanted[k] {
				s.log.Info("removing a partition the metadata no longer assigns here", "partition", k.String())
				if err := s.parts.Remove(k); err != nil {
					s.log.Warn("removing a partition", "partition", k.String(), "err", err)
				}
			}
		}
	}
	s.groups.reconcile(img, lead)
	// A topic deleted (or deleted and created again under its name) takes
	// its committed offsets with it, in every group coordinated here.
	for id, t := range last.topics {
		if nt, ok := next.topics[id]; !ok || nt.Name != t.Name {
			for _, c := range s.groups.all() {
				c.TopicDeleted(t.Name)
			}
		}
	}
	return next
}

// reconcileWorkers is how many partitions the reconciler sets up at once.
// A new partition is a directory and files written and synced, so a topic
// of many partitions spends its time in syncs, which a disk serves much
// better side by side than one by one. (A new leader epoch syncs nothing:
// its checkpoint waits for the partition's next batch.)
const reconcileWorkers = 32

// reconcileLogAt is how many partitions set up in one round are worth a
// line in the log (a restart, a topic of many partitions).
const reconcileLogAt = 100

// runAll runs every job on at most n goroutines and returns when all are
// done.
func runAll(jobs []func(), n int) {
	if len(jobs) <= 1 {
		for _, j := range jobs {
			j()
		}
		return
	}
	next := make(chan func())
	var wg sync.WaitGroup
	for range min(n, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				j()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// reconcilePartition opens partition i of t here and gives it its role.
func (s *Server) reconcilePartition(t *cluster.Topic, i int32, p cluster.Partition, st partition.ReplicaState) {
	part, err := s.parts.Ensure(partition.Spec{Topic: t.Name, TopicID: t.ID, Index: i, Configs: t.Configs})
	if err != nil {
		s.log.Error("opening a partition assigned to this broker", "topic", t.Name, "partition", i, "err", err)
		return
	}
	changed, err := part.SetState(st)
	if err != nil {
		s.log.Error("partition role", "topic", t.Name, "partition", i, "err", err)
		return
	}
	if changed {
		s.log.Debug("partition role", "topic", t.Name, "partition", i, "leader", p.Leader, "epoch", p.LeaderEpoch)
		s.fetchers.follow(part, p.Leader)
	}
}

// eligibleOf lists the brokers that may join an ISR (registered, unfenced,
// not shutting down) with their epochs, by id.
func eligibleOf(img *cluster.Metadata) []replication.ISRMember {
	var out []replication.ISRMember
	for _, b := range img.ActiveBrokers() {
		out = append(out, replication.ISRMember{ID: b.ID, BrokerEpoch: b.Epoch})
	}
	return out
}

// notifier is a value that only grows, and a channel closed at each change:
// take changed(), read the state, then wait.
type notifier struct {
	mu  sync.Mutex
	val int64
	ch  chan struct{}
}

func (n *notifier) advance(v int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	if v < n.val {
		return
	}
	n.val = v
	close(n.ch)
	n.ch = make(chan struct{})
}

func (n *notifier) value() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.val
}

func (n *notifier) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}
