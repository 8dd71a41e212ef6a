package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/cluster/quorum"
)

// A simulated broker runs what a broker process runs, on the simulator's
// goroutine: a quorum.Node of the controller quorum applying to a
// cluster.Store, the product's node shell (package node: the lifecycle,
// producer id blocks, the reconciler, the replica fetchers and the answer
// to followers' fetches, AlterPartition proposals, the controller's
// operation queue over a cluster.ControllerCore) and its partition layer
// (broker/partition in Manual mode). This file and its neighbours are the
// driver: they carry what the shell asks to send over the simulated
// network, run its timers on the simulated clock, and feed it the answers.

const (
	clusterID        = "sim"
	raftTickMs       = 10
	electionTicks    = 10
	heartbeatMs      = 100
	sessionTimeoutMs = 600
	// ctlAttemptMs: a controller request unanswered after this is tried
	// again (the network model's lost connection; the call's own timeout
	// is the product's).
	ctlAttemptMs    = 400
	proposalLimitMs = 1500 // a proposal not applied by then is given up
	lagTimeMs       = 400
)

type broker struct {
	s    *Sim
	id   int32
	disk *disk
	rng  *rand.Rand // disk crash choices, incarnation ids
	gen  int        // incarnation number: events of an earlier one are void
	up   bool
	lost bool // crashed for good (Options.LostBroker)
	// prevEpoch is the broker epoch of the last clean shutdown, -1 after a
	// crash: what the next registration says (KIP-966).
	prevEpoch int64
	slowSync  bool

	// The controller quorum and the metadata.
	node     *quorum.Node
	store    *cluster.Store
	leaderID uint64
	term     uint64
	applied  uint64 // the image offset last reconciled

	// The product's shell, one per incarnation.
	ops      *node.OpQueue
	proposal quorum.ProposalID // of the batch the queue has out
	life     *node.Lifecycle
	pids     *node.ProducerIDs
	router   *node.Router
	recon    *node.Reconciler
	fetchers *node.Fetchers
	sessions map[*node.Fetcher]*fetchSession
	parked   []*parkedFetch // followers' fetches in their long poll
	busy     bool           // inside process
	ticks    int64

	// The partitions: the product's manager of this incarnation, and the
	// driver's state of each partition it holds.
	parts    *partition.Manager
	replicas map[tp]*replica
}

func newBroker(s *Sim, id int32) *broker {
	b := &broker{s: s, id: id, rng: s.sub(subSeedDisk + uint64(id)*16), prevEpoch: -1}
	b.disk = newDisk(&s.stats, b.rng)
	return b
}

// later schedules fn for this incarnation only.
func (b *broker) later(delay int64, kind string, fn func()) {
	gen := b.gen
	b.s.at(delay, kind, func() {
		if b.up && b.gen == gen {
			fn()
		}
	})
}

func (b *broker) voters() []uint64 {
	var ids []uint64
	for i := 1; i <= b.s.opts.Brokers; i++ {
		ids = append(ids, uint64(i))
	}
	return ids
}

// start boots a process on what the disk kept: the quorum node recovers
// from it, the partitions are opened from it as the metadata names them.
func (b *broker) start() {
	b.gen++
	b.up = true
	b.s.tracef("b%d start (incarnation %d)", b.id, b.gen)
	b.store = cluster.NewStore()
	n, err := quorum.OpenNode(quorum.NodeConfig{
		NodeID: uint64(b.id), Voters: b.voters(), ClusterID: clusterID, Dir: "/quorum",
		FS: b.disk.fs(), Engine: EngineName,
		Rand:          b.s.sub(subSeedRaft + uint64(b.id)*16 + uint64(b.gen)<<32),
		ElectionTicks: electionTicks, SnapshotEntries: 64, CatchUpEntries: 16,
		StateMachine: b.store,
	})
	if err != nil {
		b.s.violate("recovery", "b%d: the quorum node does not open on what its disk kept: %v", b.id, err)
		return
	}
	b.node = n
	settings := cluster.Settings{MinInsyncReplicas: b.s.opts.MinISR, UncleanLeaderElection: b.s.opts.Unclean, ProducerIDBlock: 10}
	mutateSettings(&settings, b.s.opts.Mutation)
	core := cluster.NewControllerCore(cluster.CoreConfig{
		NodeID: b.id, ClusterID: clusterID, Settings: settings,
		Seed:           b.s.opts.Seed ^ uint64(b.id)<<40 ^ uint64(b.gen)<<48 ^ subSeedController,
		SessionTimeout: sessionTimeoutMs * time.Millisecond, FailoverGrace: 300 * time.Millisecond,
		RebalanceInterval: time.Second,
	})
	b.ops = node.NewOpQueue(core, node.OpQueueConfig{ProposalTimeout: proposalLimitMs * time.Millisecond})
	b.proposal = 0
	inc := newID(b.rng)
	b.life = node.NewLifecycle(node.LifecycleConfig{
		NodeID: b.id, ClusterID: clusterID, Incarnation: inc, DurableAcks: true, LogDir: b.disk.id,
		PreviousEpoch: b.prevEpoch, HeartbeatInterval: heartbeatMs * time.Millisecond,
		SessionTimeout: sessionTimeoutMs * time.Millisecond,
	})
	b.life.Start("sim", 9000+b.id)
	b.prevEpoch = -1 // a crash from now on is an unclean shutdown
	b.pids = node.NewProducerIDs(b.id)
	var voters []int32
	for _, v := range b.voters() {
		voters = append(voters, int32(v))
	}
	b.router = node.NewRouter(b.id, voters)
	b.recon = node.NewReconciler(b.id, core.Settings().MinISR)
	b.fetchers = node.NewFetchers(b.id)
	b.sessions = map[*node.Fetcher]*fetchSession{}
	b.parked = nil
	b.leaderID, b.term, b.applied = 0, 0, 0
	if err := b.openPartitions(); err != nil {
		b.s.violate("recovery", "b%d: the partitions do not open on what its disk kept: %v", b.id, err)
		return
	}
	b.s.checks.brokerStarted(b)
	b.process()
	if b.gen > 1 { // a restart: its peers may count it gone
		b.sayTo("peer-back", func(t *broker) { t.node.PeerBack(uint64(b.id)) })
	}
	b.later(int64(b.rng.IntN(raftTickMs)), "tick", b.tick)
}

// crash is a power loss: the process is gone, the disk keeps what the
// crash model says.
func (b *broker) crash(why string) {
	if !b.up {
		return
	}
	b.s.tracef("b%d crash: %s", b.id, why)
	b.stop()
	if b.rng.IntN(2) == 0 {
		b.sayGone() // the process was killed; the host, which lives, closes its connections
	}
	b.disk.crash(b.rng, b.s.opts.UnsyncedKeepPct, b.s.opts.TornPct)
	if b.rng.IntN(100) < b.s.opts.LoseDiskPct {
		b.s.tracef("b%d's disk is replaced", b.id)
		b.s.stats.Faults["disk-lost"]++
		b.disk.lose(b.rng)
	}
}

// sayGone is what a dead process's peers see: their connections from it
// close (quorum.Node.PeerGone). A host that loses power says nothing; the
// peers then wait out an election timeout.
func (b *broker) sayGone() {
	b.sayTo("peer-gone", func(t *broker) { t.node.PeerGone(uint64(b.id)) })
}

// sayTo runs what the other live brokers' transports see of this one's
// connections (a close, a new connection), after the network's delay: it
// travels like any message, and is lost on a clogged link.
func (b *broker) sayTo(kind string, see func(t *broker)) {
	s, from := b.s, b.id
	for _, to := range s.net.brokerIDs() {
		if to == from {
			continue
		}
		s.net.send(from, to, kind, func() {
			if t := s.brokers[to-1]; t.up {
				see(t)
				t.process()
			}
		})
	}
}

// cleanStop ends a controlled shutdown: every log synced and closed.
func (b *broker) cleanStop() {
	b.s.tracef("b%d controlled shutdown complete", b.id)
	if err := b.parts.Close(); err != nil {
		b.s.violate("partition", "b%d: closing the partitions: %v", b.id, err)
		return
	}
	for _, r := range sortedReplicas(b.replicas) {
		r.drain()
	}
	epoch := b.life.Epoch()
	b.stop()
	b.prevEpoch = epoch
	b.sayGone()
	b.s.stats.Faults["controlled-shutdown"]++
	b.s.at(200+b.s.faults.Int64N(1000), "restart", func() {
		if !b.up && !b.lost {
			b.start()
		}
	})
}

// stop ends the process. After a crash what waited on it is never
// answered (its clients time out) and its partition manager is dropped as
// it was; a controlled shutdown closed it first.
func (b *broker) stop() {
	b.replicas = map[tp]*replica{}
	b.parts = nil
	if b.node != nil {
		b.node.Close()
	}
	b.up = false
	b.gen++
	b.s.checks.brokerStopped(b)
}

// tick is the broker's clock: raft every tick, and what the product's
// goroutines do on their timers: the controller's queue, the lifecycle,
// the partitions.
func (b *broker) tick() {
	b.ticks++
	b.node.Tick()
	if out, until := b.ops.Proposing(); out && b.s.time().After(until) {
		b.outcome(cluster.Outcome{Image: b.store.Image(), Lost: fmt.Errorf("proposal %d not applied within %dms", b.proposal, proposalLimitMs), Now: b.s.time()})
	}
	b.ops.Tick(b.s.time(), b.node.Active())
	b.lifecycle()
	if b.up && b.ticks%(tickPartitionsMs/raftTickMs) == 0 {
		b.parts.Tick(b.s.time())
		b.settle()
	}
	b.process()
	if b.up {
		b.later(raftTickMs, "tick", b.tick)
	}
}

// process handles raft's Readies: messages out, proposals applied, the
// controller's operations moved on, the partitions reconciled with a new
// image.
func (b *broker) process() {
	if b.busy || !b.up {
		return
	}
	b.busy = true
	defer func() { b.busy = false }()
	for b.up {
		b.pumpOps()
		if !b.node.HasReady() {
			break
		}
		out, err := b.node.Process()
		if err != nil {
			b.crash(fmt.Sprintf("the quorum node failed: %v", err))
			return
		}
		for _, m := range out.Messages {
			b.sendRaft(m)
		}
		b.leaderID, b.term = out.Leader, out.Term
		for _, ap := range out.Applied {
			if b.proposal != 0 && ap.ID == b.proposal {
				b.outcome(cluster.Outcome{Image: b.store.Image(), Offset: ap.Index, Refused: b.store.Refusal(ap.Index), Now: b.s.time()})
			}
		}
		if out.LeaderChanged && b.proposal != 0 {
			b.outcome(cluster.Outcome{Image: b.store.Image(), Lost: quorum.ErrNotLeader, Now: b.s.time()})
		}
		if img := b.store.Image(); img.Offset() != b.applied {
			b.applied = img.Offset()
			b.s.checks.imageApplied(b, img)
			b.reconcile()
			b.lifecycle() // the metadata moving may bring a heartbeat
		}
	}
}

func (b *broker) sendRaft(m raftpb.Message) {
	s, from, gen := b.s, b.id, b.gen
	to := int32(m.To)
	snap := m.Type == raftpb.MsgSnap
	ok := s.net.send(from, to, "raft", func() {
		t := s.brokers[to-1]
		if snap && b.up && b.gen == gen {
			b.node.ReportSnapshot(m.To, raft.SnapshotFinish)
		}
		if !t.up {
			return
		}
		_ = t.node.Step(m) // a message for an older term is raft's to ignore
		t.process()
	})
	if !ok && snap {
		b.node.ReportSnapshot(m.To, raft.SnapshotFailure)
	}
}

func (b *broker) quorumState() cluster.Quorum {
	q := cluster.Quorum{Active: b.node.Active(), Term: b.term}
	for _, id := range b.node.Gone() {
		q.Gone = append(q.Gone, int32(id)) // sim brokers are their own raft ids
	}
	return q
}

// pumpOps proposes what the controller's queue asks, until it waits for a
// batch's fate or has nothing to do.
func (b *broker) pumpOps() {
	for b.proposal == 0 {
		payload, ok := b.ops.Next(b.quorumState(), b.store.Image(), b.s.time())
		if !ok {
			return
		}
		id, err := b.node.Propose(payload)
		if err != nil {
			b.ops.Outcome(cluster.Outcome{Image: b.store.Image(), Lost: err, Now: b.s.time()})
			continue
		}
		b.proposal = id
	}
}

// outcome hands the queue what became of the batch it has out.
func (b *broker) outcome(out cluster.Outcome) {
	b.proposal = 0
	b.ops.Outcome(out)
}

// leader is the quorum leader this broker knows, -1 for none.
func (b *broker) leader() int32 {
	if b.leaderID == 0 {
		return -1
	}
	return int32(b.leaderID)
}
