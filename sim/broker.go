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
	"github.com/minikafka/minikafka/engine"
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
	ctlAttemptMs   = 400
	lagTimeMs      = 400
	syncIntervalMs = 100 // sync=interval's period
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

	// The controller quorum and the metadata (or, for a broker that is
	// not a voter, the follower of the voters' log).
	raft       *quorum.Node // nil for a broker that is not a voter
	store      *cluster.Store
	meta       *node.MetadataFollower
	metaParked []*parkedMeta // followers' metadata fetches waiting here
	leaderID   uint64
	term       uint64
	applied    uint64 // the image offset last reconciled

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

	// Transactions: the coordinators of the partitions of
	// __transaction_state led here, and the marker writes waiting for
	// their markers to commit (txn_coord.go).
	txnCoords   map[int32]*txnCoord
	markerWaits []*markerWait
	// The group coordinators of the partitions of __consumer_offsets led
	// here (group_coord.go).
	groupCoords map[int32]*groupCoord
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

// voters are the controller quorum: brokers 1..Options.Voters.
func (s *Sim) voters() []int32 {
	var ids []int32
	for i := 1; i <= s.opts.voters(); i++ {
		ids = append(ids, int32(i))
	}
	return ids
}

// voter reports whether the broker is one of the quorum's voters.
func (b *broker) voter() bool { return int(b.id) <= b.s.opts.voters() }

// start boots a process on what the disk kept: the quorum node recovers
// from it, the partitions are opened from it as the metadata names them.
func (b *broker) start() {
	b.gen++
	b.up = true
	b.s.tracef("b%d start (incarnation %d)", b.id, b.gen)
	b.store = cluster.NewStore()
	b.raft, b.meta = nil, nil
	if b.voter() {
		var ids []uint64
		for _, v := range b.s.voters() {
			ids = append(ids, uint64(v))
		}
		n, err := quorum.OpenNode(quorum.NodeConfig{
			NodeID: uint64(b.id), Voters: ids, ClusterID: clusterID, Dir: "/quorum",
			FS: b.disk.fs(), Engine: EngineName,
			Rand:          b.s.sub(subSeedRaft + uint64(b.id)*16 + uint64(b.gen)<<32),
			ElectionTicks: electionTicks, SnapshotEntries: 64, CatchUpEntries: 16,
			StateMachine: watchedStore{b.store, b.s},
		})
		if err != nil {
			b.s.violate("recovery", "b%d: the quorum node does not open on what its disk kept: %v", b.id, err)
			return
		}
		b.raft = n
	} else {
		// Not a voter: the metadata comes from the voters' log, from the
		// start at every process start, as the broker's does.
		b.meta = node.NewMetadataFollower(b.id, b.store, discard)
	}
	settings := cluster.Settings{MinInsyncReplicas: b.s.opts.MinISR, UncleanLeaderElection: b.s.opts.Unclean, ProducerIDBlock: 10}
	mutateSettings(&settings, b.s.opts.Mutation)
	core := cluster.NewControllerCore(cluster.CoreConfig{
		NodeID: b.id, ClusterID: clusterID, Settings: settings,
		Seed:           b.s.opts.Seed ^ uint64(b.id)<<40 ^ uint64(b.gen)<<48 ^ subSeedController,
		SessionTimeout: sessionTimeoutMs * time.Millisecond, FailoverGrace: 300 * time.Millisecond,
		RebalanceInterval: time.Second,
	})
	b.ops = node.NewOpQueue(core, node.OpQueueConfig{})
	b.proposal = 0
	inc := newID(b.rng)
	lc := node.LifecycleConfig{
		NodeID: b.id, ClusterID: clusterID, Incarnation: inc, DurableAcks: b.s.opts.Sync == engine.SyncAlways, LogDir: b.disk.id,
		PreviousEpoch: b.prevEpoch, HeartbeatInterval: heartbeatMs * time.Millisecond,
		SessionTimeout: sessionTimeoutMs * time.Millisecond,
	}
	if !b.voter() {
		lc.CheckVoters = b.s.voters()
	}
	b.life = node.NewLifecycle(lc)
	b.life.Start("sim", 9000+b.id)
	b.prevEpoch = -1 // a crash from now on is an unclean shutdown
	b.pids = node.NewProducerIDs(b.id)
	b.router = node.NewRouter(b.id, b.s.voters())
	b.recon = node.NewReconciler(b.id, core.Settings().MinISRIn)
	b.fetchers = node.NewFetchers(b.id)
	b.sessions = map[*node.Fetcher]*fetchSession{}
	b.parked = nil
	b.txnCoords, b.markerWaits = map[int32]*txnCoord{}, nil
	b.groupCoords = map[int32]*groupCoord{}
	b.leaderID, b.term, b.applied = 0, 0, 0
	if err := b.openPartitions(); err != nil {
		b.s.violate("recovery", "b%d: the partitions do not open on what its disk kept: %v", b.id, err)
		return
	}
	b.s.checks.brokerStarted(b)
	b.process()
	if b.gen > 1 && b.voter() { // a restart: its peers may count it gone
		b.sayTo("peer-back", func(t *broker) { t.raft.PeerBack(uint64(b.id)) })
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
	b.s.checks.powerLoss(b)
	b.stop()
	if b.rng.IntN(2) == 0 && b.voter() {
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
	b.sayTo("peer-gone", func(t *broker) { t.raft.PeerGone(uint64(b.id)) })
}

// sayTo runs what the other live brokers' transports see of this one's
// connections (a close, a new connection), after the network's delay: it
// travels like any message, and is lost on a clogged link.
func (b *broker) sayTo(kind string, see func(t *broker)) {
	s, from := b.s, b.id
	for _, to := range s.voters() {
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
	if b.voter() {
		b.sayGone()
	}
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
	for _, fs := range b.sessions {
		fs.stopped = true // its fetcher goes with the process
	}
	b.replicas = map[tp]*replica{}
	b.parts = nil
	for _, c := range b.txnCoords {
		c.closed = true
	}
	b.txnCoords, b.markerWaits = nil, nil
	for _, c := range b.groupCoords {
		c.closed = true // gone with the process: its waits are never answered
	}
	b.groupCoords = nil
	if b.raft != nil {
		b.raft.Close()
	}
	b.metaParked = nil
	b.up = false
	b.gen++
	b.s.checks.brokerStopped(b)
}

// tick is the broker's clock: raft every tick, and what the product's
// goroutines do on their timers: the controller's queue, the lifecycle,
// the partitions.
func (b *broker) tick() {
	b.ticks++
	if b.raft != nil {
		b.raft.Tick()
	}
	b.followMetadata()
	b.ops.Tick(b.s.time(), b.active())
	b.lifecycle()
	if b.up && b.s.opts.Sync == engine.SyncInterval && b.ticks%(syncIntervalMs/raftTickMs) == 0 {
		b.disk.syncPartitions() // the engines' interval flushers
	}
	if b.up && b.ticks%(tickPartitionsMs/raftTickMs) == 0 {
		b.parts.Tick(b.s.time())
		if b.s.opts.RetentionBytes > 0 {
			_ = b.parts.EnforceRetention() // the manager's background loop's; errors show in the partitions
		}
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
		b.metadataApplied()
		if b.raft == nil || !b.raft.HasReady() {
			break
		}
		out, err := b.raft.Process()
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
	}
}

// metadataApplied acts on a new image: the checkers see it, the
// partitions are reconciled with it, the parked metadata fetches answered.
func (b *broker) metadataApplied() {
	img := b.store.Image()
	if img.Offset() == b.applied {
		return
	}
	b.applied = img.Offset()
	b.s.checks.imageApplied(b, img)
	b.reconcile()
	b.lifecycle() // the metadata moving may bring a heartbeat
	b.wakeMetadataFetches()
}

// active reports whether this broker is the active controller.
func (b *broker) active() bool { return b.raft != nil && b.raft.Active() }

func (b *broker) sendRaft(m raftpb.Message) {
	s, from, gen := b.s, b.id, b.gen
	to := int32(m.To)
	snap := m.Type == raftpb.MsgSnap
	ok := s.net.send(from, to, "raft", func() {
		t := s.brokers[to-1]
		if snap && b.up && b.gen == gen {
			b.raft.ReportSnapshot(m.To, raft.SnapshotFinish)
		}
		if !t.up {
			return
		}
		_ = t.raft.Step(m) // a message for an older term is raft's to ignore
		t.process()
	})
	if !ok && snap {
		b.raft.ReportSnapshot(m.To, raft.SnapshotFailure)
	}
}

func (b *broker) quorumState() cluster.Quorum {
	q := cluster.Quorum{Active: b.active(), Term: b.term}
	if b.raft == nil {
		return q
	}
	for _, id := range b.raft.Gone() {
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
		if b.raft == nil {
			panic("sim: an operation of a broker that is not a voter proposes")
		}
		id, err := b.raft.Propose(payload)
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
