package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/cluster/quorum"
)

// A simulated broker runs what a broker process runs, on the simulator's
// goroutine: a quorum.Node of the controller quorum (every broker is a
// voter) applying to a cluster.Store, a cluster.ControllerCore that serves
// the controller APIs while this node leads, the broker's lifecycle
// (registration, heartbeats, producer id blocks, controlled shutdown), and
// one replica per partition the metadata gives it (replica.go).

const (
	clusterID        = "sim"
	raftTickMs       = 10
	electionTicks    = 10
	heartbeatMs      = 100
	sessionTimeoutMs = 600
	ctlTimeoutMs     = 400  // a controller request unanswered after this is retried
	proposalLimitMs  = 1500 // a proposal not applied by then is given up
	lagTimeMs        = 400
)

type broker struct {
	s    *Sim
	id   int32
	disk *disk
	rng  *rand.Rand // disk crash choices, incarnation ids
	gen  int        // incarnation number: events of an earlier one are void
	up   bool
	lost bool // crashed for good (Options.LostBroker)

	// The controller quorum and the metadata.
	node     *quorum.Node
	store    *cluster.Store
	core     *cluster.ControllerCore
	leaderID uint64
	term     uint64
	applied  uint64 // the image offset last reconciled

	// The controller's operations, one at a time.
	ctlQueue    []ctlJob
	ctlOp       *cluster.Op
	ctlDone     func(*cluster.Op)
	ctlProposal quorum.ProposalID
	ctlDeadline int64
	ctlTickBusy bool
	processing  bool

	// The lifecycle.
	incarnation  uuid.UUID
	epoch        int64 // -1 until registered
	prevEpoch    int64 // the epoch of a clean shutdown, -1 otherwise
	fenced       bool
	lifeBusy     bool
	lastHB       int64
	wantShutdown bool
	pidNext      int64
	pidEnd       int64
	pidBusy      bool
	slowSync     bool

	// The partitions: the product's manager of this incarnation, and the
	// shell's state of each partition it holds.
	parts    *partition.Manager
	replicas map[tp]*replica
	ticks    int64
}

type ctlJob struct {
	start func(cluster.Quorum, *cluster.Metadata, time.Time) *cluster.Op
	done  func(*cluster.Op)
}

func newBroker(s *Sim, id int32) *broker {
	b := &broker{s: s, id: id, rng: s.sub(subSeedDisk + uint64(id)*16), prevEpoch: -1}
	b.disk = newDisk(&s.stats)
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

// start boots a process on what the disk kept: the quorum node recovers
// from it, the replicas are opened from it as the metadata names them.
func (b *broker) start() {
	b.gen++
	b.up = true
	b.s.tracef("b%d start (incarnation %d)", b.id, b.gen)
	b.store = cluster.NewStore()
	var voters []uint64
	for i := 1; i <= b.s.opts.Brokers; i++ {
		voters = append(voters, uint64(i))
	}
	node, err := quorum.OpenNode(quorum.NodeConfig{
		NodeID: uint64(b.id), Voters: voters, ClusterID: clusterID, Dir: "/quorum",
		FS: b.disk.fs(), Engine: EngineName,
		Rand:          b.s.sub(subSeedRaft + uint64(b.id)*16 + uint64(b.gen)<<32),
		ElectionTicks: electionTicks, SnapshotEntries: 64, CatchUpEntries: 16,
		StateMachine: b.store,
	})
	if err != nil {
		b.s.violate("recovery", "b%d: the quorum node does not open on what its disk kept: %v", b.id, err)
		return
	}
	b.node = node
	b.core = cluster.NewControllerCore(cluster.CoreConfig{
		NodeID: b.id, ClusterID: clusterID,
		Settings: cluster.Settings{
			MinInsyncReplicas: b.s.opts.MinISR, UncleanLeaderElection: b.s.opts.Unclean, DisableELR: b.s.opts.DisableELR,
			ProducerIDBlock: 10,
		},
		Seed:           b.s.opts.Seed ^ uint64(b.id)<<40 ^ uint64(b.gen)<<48 ^ subSeedController,
		SessionTimeout: sessionTimeoutMs * time.Millisecond, FailoverGrace: 300 * time.Millisecond,
		RebalanceInterval: time.Second,
	})
	var inc [16]byte
	for i := range inc {
		inc[i] = byte(b.rng.Uint32())
	}
	b.incarnation = uuid.UUID(inc)
	b.leaderID, b.term, b.applied = 0, 0, 0
	b.ctlQueue, b.ctlOp, b.ctlDone, b.ctlTickBusy = nil, nil, nil, false
	b.epoch, b.fenced, b.lifeBusy, b.wantShutdown = -1, true, false, false
	b.pidNext, b.pidEnd, b.pidBusy = 0, 0, false
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
	b.prevEpoch = -1
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
	b.prevEpoch = b.epoch
	b.stop()
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

// tick is the broker's clock: raft every tick, the controller, the
// lifecycle and the replicas at their own periods.
func (b *broker) tick() {
	b.ticks++
	b.node.Tick()
	if b.ctlOp != nil && b.s.now > b.ctlDeadline {
		b.applyOutcome(cluster.Outcome{Image: b.store.Image(), Lost: fmt.Errorf("proposal %d not applied within %dms", b.ctlProposal, proposalLimitMs), Now: b.s.time()})
	}
	if b.ticks%10 == 0 && b.node.Active() && !b.ctlTickBusy {
		b.ctlTickBusy = true
		b.submit(ctlJob{
			start: func(q cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op {
				return b.core.Tick(q, img, now)
			},
			done: func(*cluster.Op) { b.ctlTickBusy = false },
		})
	}
	if b.ticks%5 == 0 {
		b.lifecycle()
	}
	if b.ticks%(tickPartitionsMs/raftTickMs) == 0 && b.up {
		b.parts.Tick(b.s.time())
		b.settle()
	}
	b.process()
	if b.up {
		b.later(raftTickMs, "tick", b.tick)
	}
}

// process handles raft's Readies: messages out, proposals applied, the
// controller's operations moved on, the replicas reconciled with a new image.
func (b *broker) process() {
	if b.processing || !b.up {
		return
	}
	b.processing = true
	defer func() { b.processing = false }()
	for b.up {
		b.pumpCtl()
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
			if b.ctlOp != nil && ap.ID == b.ctlProposal {
				b.applyOutcome(cluster.Outcome{Image: b.store.Image(), Offset: ap.Index, Refused: b.store.Refusal(ap.Index), Now: b.s.time()})
			}
		}
		if out.LeaderChanged && b.ctlOp != nil && b.ctlProposal != 0 {
			b.applyOutcome(cluster.Outcome{Image: b.store.Image(), Lost: quorum.ErrNotLeader, Now: b.s.time()})
		}
		if img := b.store.Image(); img.Offset() != b.applied {
			b.applied = img.Offset()
			b.s.checks.imageApplied(b, img)
			b.reconcile()
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

// submit queues a controller operation; it starts once those before it are
// done.
func (b *broker) submit(j ctlJob) {
	b.ctlQueue = append(b.ctlQueue, j)
	b.process()
}

func (b *broker) quorumState() cluster.Quorum {
	q := cluster.Quorum{Active: b.node.Active(), Term: b.term}
	for _, id := range b.node.Gone() {
		q.Gone = append(q.Gone, int32(id)) // sim brokers are their own raft ids
	}
	return q
}

func (b *broker) pumpCtl() {
	for b.ctlOp == nil && len(b.ctlQueue) > 0 {
		j := b.ctlQueue[0]
		b.ctlQueue = b.ctlQueue[1:]
		op := j.start(b.quorumState(), b.store.Image(), b.s.time())
		if op == nil {
			j.done(nil)
			continue
		}
		b.ctlOp, b.ctlDone = op, j.done
		b.advanceOp()
	}
}

// advanceOp proposes what the current operation asks, or finishes it.
func (b *broker) advanceOp() {
	for b.ctlOp != nil {
		op := b.ctlOp
		if op.Done() {
			done := b.ctlDone
			b.ctlOp, b.ctlDone, b.ctlProposal = nil, nil, 0
			done(op)
			return
		}
		payload, err := cluster.EncodeBatch(op.Proposal())
		var id quorum.ProposalID
		if err == nil {
			id, err = b.node.Propose(payload)
		}
		if err != nil {
			b.ctlProposal = 0
			op.Applied(cluster.Outcome{Image: b.store.Image(), Lost: err, Now: b.s.time()})
			continue
		}
		b.ctlProposal, b.ctlDeadline = id, b.s.now+proposalLimitMs
		return
	}
}

func (b *broker) applyOutcome(out cluster.Outcome) {
	b.ctlProposal = 0
	b.ctlOp.Applied(out)
	b.advanceOp()
}

// controller is where this broker sends controller requests: the quorum
// leader it knows, or any broker.
func (b *broker) controller() int32 {
	if b.leaderID != 0 {
		return int32(b.leaderID)
	}
	return 1 + int32(b.s.work.IntN(b.s.opts.Brokers))
}
