package quorum

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/engine"
)

// ErrNotLeader: this node is not the Active leader. The error value is a
// *NotLeaderError naming the leader this node knows of (0: none): retry
// there, or after the election.
var ErrNotLeader = errors.New("quorum: not the active leader")

// NotLeaderError is ErrNotLeader with the leader this node knows of.
type NotLeaderError struct {
	Leader uint64 // 0 when no leader is known
	Term   uint64
}

func (e *NotLeaderError) Error() string {
	if e.Leader == 0 {
		return fmt.Sprintf("%v (no leader known at term %d)", ErrNotLeader, e.Term)
	}
	return fmt.Sprintf("%v (the leader is %d at term %d)", ErrNotLeader, e.Leader, e.Term)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// ErrProposalDropped: raft refused the proposal (a leadership transfer is
// under way, or too much is uncommitted). Retry shortly.
var ErrProposalDropped = errors.New("quorum: proposal dropped")

// campaignTransfer is raft's tag on the votes of a leadership transfer,
// which a lease must not block.
var campaignTransfer = []byte("CampaignTransfer")

// Node is one controller's raft, synchronous and deterministic: no
// goroutines, no clock, no I/O but through NodeConfig.FS and the log engine.
// Its methods must be called from one goroutine at a time. After an error
// from Process (I/O, or the StateMachine failing) the node is broken: every
// later call returns that error; Close it and reopen.
type Node struct {
	cfg    NodeConfig
	log    *slog.Logger
	disk   *disk
	ms     *raft.MemoryStorage
	rn     *raft.RawNode
	cs     raftpb.ConfState
	quorum int

	incarnation uint64
	seq         ProposalID

	ticks uint64 // Tick calls since open

	// The election timer of a follower or candidate (raft's own is never
	// ticked: it draws from crypto/rand).
	electionElapsed int
	electionTimeout int

	// The lease of a leader: the tick each voter was last heard from at
	// leaderTerm.
	leader     bool
	leaderTerm uint64
	heard      map[uint64]uint64

	// The peers whose connection ended (PeerGone) and that have neither
	// connected again (PeerBack) nor sent anything since.
	gone map[uint64]bool

	applied   uint64
	snapIndex uint64

	// As of the last Output, to report changes.
	lastLeader, lastTerm uint64

	err error // sticky
}

// OpenNode recovers a node from cfg.Dir, or bootstraps a fresh one with
// cfg.Voters when the directory holds no state. A directory bootstrapped
// with other voters, another cluster id or node id is refused
// (ErrVotersChanged, ErrWrongCluster).
func OpenNode(cfg NodeConfig) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := openDisk(cfg)
	if err != nil {
		return nil, err
	}
	n, err := newNode(cfg, d)
	if err != nil {
		d.log.Close()
		return nil, err
	}
	return n, nil
}

// openDisk claims cfg.Dir, checks or writes META and opens the raft log.
func openDisk(cfg NodeConfig) (*disk, error) {
	drv, err := engine.Lookup(cfg.Engine)
	if err != nil {
		return nil, fmt.Errorf("quorum: raft log: %w", err)
	}
	fs := cfg.FS
	if err := fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("quorum: create %s: %w", cfg.Dir, err)
	}
	if err := engine.SyncDir(fs, fs.PathDir(cfg.Dir)); err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	d := &disk{fs: fs, dir: cfg.Dir}
	want := meta{clusterID: cfg.ClusterID, nodeID: cfg.NodeID, voters: cfg.Voters}
	m, found, err := d.loadMeta()
	if err != nil {
		return nil, err
	}
	if found {
		if err := m.check(want); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Dir, err)
		}
		if !drv.Caps.Durable {
			return nil, fmt.Errorf("quorum: %s holds raft state, but engine %s is not durable: its log is gone", cfg.Dir, cfg.Engine)
		}
	} else {
		for _, name := range []string{hardStateFile, snapshotFile} {
			if _, err := fs.Stat(d.path(name)); err == nil {
				return nil, fmt.Errorf("%w: %s holds %s but no %s", ErrCorrupt, cfg.Dir, name, metaFile)
			}
		}
	}
	log, err := engine.Open(cfg.Engine, d.path(logDir), engine.Options{FS: fs, Sync: engine.SyncAlways, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("quorum: open the raft log: %w", err)
	}
	d.log = log
	if !found {
		if err := bootstrap(d, want); err != nil {
			log.Close()
			return nil, err
		}
	}
	return d, nil
}

// bootstrap starts a fresh log at index 1 and writes META last: until META
// exists, the directory counts as empty.
func bootstrap(d *disk, m meta) error {
	if d.log.EndOffset() > d.log.StartOffset() {
		return fmt.Errorf("%w: %s has no %s but its raft log holds entries", ErrCorrupt, d.dir, metaFile)
	}
	if d.log.StartOffset() < 1 {
		if err := d.log.DeleteBefore(1); err != nil {
			return fmt.Errorf("quorum: start the raft log at 1: %w", err)
		}
	}
	return d.saveMeta(m)
}

func newNode(cfg NodeConfig, d *disk) (*Node, error) {
	cs := raftpb.ConfState{Voters: cfg.Voters}
	rec, err := d.recoverState(cs)
	if err != nil {
		return nil, err
	}
	si := rec.snap.Metadata.Index
	if si > 0 {
		if err := cfg.StateMachine.Restore(si, rec.snap.Data); err != nil {
			return nil, fmt.Errorf("quorum: restore the state machine from the snapshot at %d: %w", si, err)
		}
	}
	logger := cfg.Logger.With("raft-id", cfg.NodeID)
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        cfg.NodeID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             1,
		Storage:                   storage{MemoryStorage: rec.ms, cs: cs},
		Applied:                   si,
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxUncommittedEntriesSize: DefaultMaxUncommittedBytes,
		MaxInflightMsgs:           DefaultMaxInflightMsgs,
		CheckQuorum:               false, // needs follower ticks; see the lease
		PreVote:                   true,
		DisableProposalForwarding: true, // a proposal goes to the leader, or fails
		Logger:                    raftLogger{logger},
	})
	if err != nil {
		return nil, fmt.Errorf("quorum: start raft: %w", err)
	}
	n := &Node{
		cfg:         cfg,
		log:         logger,
		disk:        d,
		ms:          rec.ms,
		rn:          rn,
		cs:          cs,
		quorum:      len(cfg.Voters)/2 + 1,
		incarnation: cfg.Rand.Uint64(),
		heard:       map[uint64]uint64{},
		gone:        map[uint64]bool{},
		applied:     si,
		snapIndex:   si,
		lastTerm:    rec.hs.Term,
	}
	n.resetElectionTimer()
	logger.Info("quorum: node open", "voters", cfg.Voters, "term", rec.hs.Term,
		"commit", rec.hs.Commit, "snapshot", si, "last", lastIndex(rec.ms))
	if len(cfg.Voters) == 1 {
		n.campaign() // nobody to wait for
	}
	return n, nil
}

func lastIndex(ms *raft.MemoryStorage) uint64 {
	i, _ := ms.LastIndex()
	return i
}

// ID is the node's id.
func (n *Node) ID() uint64 { return n.cfg.NodeID }

// Voters are the voter ids, sorted.
func (n *Node) Voters() []uint64 { return append([]uint64(nil), n.cfg.Voters...) }

// Tick advances the node's logical clock by one tick: a leader sends
// heartbeats; a follower or candidate campaigns once its election timer
// expires.
func (n *Node) Tick() {
	if n.err != nil {
		return
	}
	n.ticks++
	if n.leader {
		n.rn.Tick()
		n.observe()
		return
	}
	n.electionElapsed++
	if n.electionElapsed >= n.electionTimeout {
		n.campaign()
	}
}

// Campaign starts an election now (a pre-vote first), unless this node leads.
func (n *Node) Campaign() {
	if n.err == nil && !n.leader {
		n.campaign()
	}
}

func (n *Node) campaign() {
	n.resetElectionTimer()
	if err := n.rn.Campaign(); err != nil {
		n.log.Debug("quorum: campaign", "err", err)
	}
	n.observe()
}

// resetElectionTimer draws a new election timeout in [E, 2E) ticks.
func (n *Node) resetElectionTimer() {
	e := n.cfg.ElectionTicks
	n.electionElapsed = 0
	n.electionTimeout = e + n.cfg.Rand.IntN(e)
}

// Step hands the node a message from a peer.
func (n *Node) Step(m raftpb.Message) error {
	if n.err != nil {
		return n.err
	}
	if m.To != n.cfg.NodeID {
		return fmt.Errorf("quorum: node %d got a %s addressed to %d", n.cfg.NodeID, m.Type, m.To)
	}
	if raft.IsLocalMsg(m.Type) {
		return fmt.Errorf("quorum: node %d got local message %s from %d", n.cfg.NodeID, m.Type, m.From)
	}
	delete(n.gone, m.From) // it lives
	term := n.rn.BasicStatus().Term
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap:
		if m.Term >= term {
			n.electionElapsed = 0 // the leader is alive
		}
	case raftpb.MsgPreVote, raftpb.MsgVote:
		if m.Term > term && n.inLease() && !bytes.Equal(m.Context, campaignTransfer) {
			// As etcd's CheckQuorum: a node that heard from its leader within
			// the election timeout does not help depose it.
			n.log.Debug("quorum: ignored a vote request in the leader's lease", "type", m.Type, "from", m.From, "term", m.Term)
			return nil
		}
	case raftpb.MsgAppResp, raftpb.MsgHeartbeatResp:
		if n.leader && m.Term == n.leaderTerm {
			n.heard[m.From] = n.ticks
		}
	}
	if err := n.rn.Step(m); err != nil {
		return fmt.Errorf("quorum: node %d step %s from %d: %w", n.cfg.NodeID, m.Type, m.From, err)
	}
	n.observe()
	return nil
}

// inLease reports whether the current leader is known to be alive: for a
// leader, that it is Active; for a follower, that it heard from its leader
// within E ticks.
func (n *Node) inLease() bool {
	if n.leader {
		return n.Active()
	}
	return n.rn.BasicStatus().Lead != raft.None && n.electionElapsed < n.cfg.ElectionTicks
}

// observe follows raft's role changes: a new leader's lease starts empty; a
// node that stops leading starts its election timer afresh.
func (n *Node) observe() {
	st := n.rn.BasicStatus()
	isLeader := st.RaftState == raft.StateLeader
	switch {
	case isLeader && !n.leader:
		n.leaderTerm = st.Term
		clear(n.heard)
	case !isLeader && n.leader:
		n.resetElectionTimer()
	}
	n.leader = isLeader
}

// Active reports whether this node is the leader and has heard from a
// quorum of voters, itself included, within the last E ticks. The
// controller serves only while Active. Like etcd's CheckQuorum lease, it
// counts ticks: it assumes ticks pass at about the same rate everywhere and
// messages take less than a tick. It decides who serves, never what commits.
func (n *Node) Active() bool {
	if !n.leader || n.err != nil {
		return false
	}
	count := 1
	for _, id := range n.cfg.Voters {
		if t, ok := n.heard[id]; ok && id != n.cfg.NodeID && n.ticks-t < uint64(n.cfg.ElectionTicks) {
			count++
		}
	}
	return count >= n.quorum
}

// Propose appends payload to the log if this node is the leader (Active or
// not: the caller decides whether to serve). The returned id shows up in
// Output.Applied once the entry is committed and applied here. A proposal
// may be lost without a word if leadership changes before it commits:
// Output.LeaderChanged says when to give up on it.
func (n *Node) Propose(payload []byte) (ProposalID, error) {
	if n.err != nil {
		return 0, n.err
	}
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return 0, &NotLeaderError{Leader: st.Lead, Term: st.Term}
	}
	n.seq++
	id := n.seq
	data := envelope{node: n.cfg.NodeID, incarnation: n.incarnation, seq: id}.wrap(payload)
	if err := n.rn.Propose(data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			return 0, fmt.Errorf("%w: %w", ErrProposalDropped, err)
		}
		return 0, fmt.Errorf("quorum: propose: %w", err)
	}
	return id, nil
}

// TransferLeadership asks the leader to hand over to voter to: it brings
// to up to date, then tells it to campaign at once. Raft gives up after E
// ticks if that does not happen. Proposals are dropped meanwhile.
func (n *Node) TransferLeadership(to uint64) {
	if n.err == nil {
		n.rn.TransferLeader(to)
		n.observe()
	}
}

// PeerGone says that the connection peer id sends on has ended: a process
// killed closes its sockets, so a TCP transport sees the death at once,
// long before an election timeout would. A follower whose leader that was
// stops honouring the leader's lease and campaigns within a few ticks: 1 +
// 2 × its rank by id among the other voters, so that the followers that all
// saw the same close campaign one after another and do not split the vote
// (one whose log is behind is refused, and the next one's turn comes two
// ticks later). Raft's safety never depends on timing, and the lease decides
// who serves, not what commits: if the leader lives on (one connection
// lost), a message from it restores the lease, and a follower that still
// hears from it refuses this node's pre-vote.
func (n *Node) PeerGone(id uint64) {
	if n.err != nil || id == n.cfg.NodeID || !slices.Contains(n.cfg.Voters, id) {
		return
	}
	n.gone[id] = true
	if n.leader || n.rn.BasicStatus().Lead != id {
		return
	}
	rank := 0
	for _, v := range n.cfg.Voters {
		if v != id && v < n.cfg.NodeID {
			rank++
		}
	}
	e := n.cfg.ElectionTicks
	n.electionElapsed = e
	n.electionTimeout = e + min(1+2*rank, e)
	n.log.Debug("quorum: the leader's connection ended; campaigning soon", "leader", id, "in-ticks", n.electionTimeout-n.electionElapsed)
}

// PeerBack says peer id connected again: it is alive, whether or not it
// has anything to send this node (a follower talks to its leader only).
func (n *Node) PeerBack(id uint64) { delete(n.gone, id) }

// Gone lists, by id, the peers whose connection ended (PeerGone) and that
// have neither connected again nor sent anything since: their processes
// have likely died. A new controller need not wait for their heartbeats.
func (n *Node) Gone() []uint64 {
	return slices.Sorted(maps.Keys(n.gone))
}

// ReportUnreachable tells raft that a message to id was lost, so that the
// leader probes id again instead of streaming into the void.
func (n *Node) ReportUnreachable(id uint64) {
	if n.err == nil {
		n.rn.ReportUnreachable(id)
	}
}

// ReportSnapshot tells raft whether a snapshot message to id was delivered.
// A leader waits for it (or for id's answer) before it replicates to id
// again, so the shell must report every MsgSnap it sends or drops.
func (n *Node) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	if n.err == nil {
		n.rn.ReportSnapshot(id, status)
	}
}

// HasReady reports whether Process has work to do.
func (n *Node) HasReady() bool { return n.err == nil && n.rn.HasReady() }

// Close releases the raft log. The node is unusable afterwards.
func (n *Node) Close() error {
	if n.err == nil {
		n.err = ErrClosed
	}
	if n.disk.log == nil {
		return nil
	}
	err := n.disk.log.Close()
	n.disk.log = nil
	if err != nil && !errors.Is(err, engine.ErrClosed) {
		return fmt.Errorf("quorum: close the raft log: %w", err)
	}
	return nil
}

// ErrClosed: the node or server was closed. Open a new one to go on.
var ErrClosed = errors.New("quorum: closed")
