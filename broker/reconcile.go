package broker

import (
	"sync"
	"time"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/cluster"
)

// The reconciler makes this broker hold what the metadata says
// (node.Reconciler plans it): every partition it is a replica of open, as
// leader or follower at the partition's leader epoch, its follower
// fetching from its leader; partitions it no longer holds closed and
// deleted; the group coordinators following __consumer_offsets
// leadership. It runs on one goroutine, after every change of the
// metadata image and of the broker's own standing (registered, fenced).

func (s *Server) reconcileLoop() {
	defer s.bg.Done()
	r := node.NewReconciler(s.cfg.NodeID, s.ctl.Settings().MinISRIn)
	for {
		changed := s.store.Changed()
		s.reconcileBegan.Store(s.cfg.Clock.Now().UnixNano())
		offset := s.reconcile(r, s.store.Image())
		s.reconciled.advance(int64(offset))
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

// reconcile carries out what img asks and returns its offset.
func (s *Server) reconcile(r *node.Reconciler, img *cluster.Metadata) uint64 {
	s.throttles.apply(img, s.cfg.NodeID)
	st := node.Standing{Epoch: s.life.epoch.Load()}
	plan := r.Plan(img, st, s.parts.Keys(), s.cfg.Clock.Now())
	work := make([]func(), len(plan.Set))
	for i, w := range plan.Set {
		work[i] = func() { s.reconcilePartition(w) }
	}
	began := s.cfg.Clock.Now()
	runAll(work, reconcileWorkers)
	if len(work) >= reconcileLogAt {
		took := s.cfg.Clock.Now().Sub(began)
		s.log.Info("partitions set up", "partitions", len(work), "lead", plan.Lead, "took", took.Round(time.Millisecond))
	}
	for _, k := range plan.Remove {
		s.log.Info("removing a partition the metadata no longer assigns here", "partition", k.String())
		s.fetchers.unfollow(k)
		if err := s.parts.Remove(k); err != nil {
			s.log.Warn("removing a partition", "partition", k.String(), "err", err)
		}
	}
	s.groups.reconcile(img, plan.Lead)
	s.txns.reconcile(img, plan.Lead)
	// A topic deleted (or deleted and created again under its name) takes
	// its committed offsets with it, in every group coordinated here.
	for _, name := range plan.Deleted {
		for _, c := range s.groups.all() {
			c.TopicDeleted(name)
		}
	}
	r.Done(plan)
	return plan.Offset
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

// reconcilePartition opens w's partition here and gives it its role.
func (s *Server) reconcilePartition(w node.Work) {
	part, changed, err := node.Apply(s.parts, w)
	if err != nil {
		s.log.Error("setting up a partition assigned to this broker", "topic", w.Topic.Name, "partition", w.Index,
			"leader", w.State.Leader, "epoch", w.State.LeaderEpoch, "err", err)
		return
	}
	if changed {
		s.log.Debug("partition role", "topic", w.Topic.Name, "partition", w.Index, "leader", w.State.Leader, "epoch", w.State.LeaderEpoch)
		s.fetchers.follow(part, w.State.Leader)
	}
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
