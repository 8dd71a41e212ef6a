package quorum

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/clock"
)

// ErrLeadershipLost: the leader or term changed while the proposal waited.
// The proposal may still commit later (the new leader may have its entry),
// or never: a caller that retries must make its proposal idempotent, or
// check the state first.
var ErrLeadershipLost = errors.New("quorum: leadership changed before the proposal was applied")

// Defaults for zero ServerConfig fields.
const (
	DefaultTickInterval = 50 * time.Millisecond
	DefaultInboxSize    = 4096
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Node configures the raft node. A nil Node.Rand is seeded from
	// crypto/rand: production needs no replay.
	Node NodeConfig
	// Transport carries messages to the other voters; the Server starts it
	// and closes it.
	Transport Transport
	// Clock drives the ticks. Nil means clock.Real.
	Clock clock.Clock
	// TickInterval is one raft tick. Default DefaultTickInterval: with the
	// default ten election ticks, a follower campaigns after 0.5-1 s without
	// a leader.
	TickInterval time.Duration
	// InboxSize bounds the messages waiting for the loop; more are dropped.
	InboxSize int
	// OnFail, if set, is called once, from the loop, when the node stops
	// for good (its disk failed: a write or sync of the raft log, the hard
	// state or a snapshot): from then on the server answers every call
	// with the error, and a process that is a voter should stop, as Kafka
	// halts on a fault of its metadata log. It must not block.
	OnFail func(error)
}

// Server runs a Node on its own goroutine: ticks on the clock, messages
// from the Transport, proposals from callers. All its methods are safe for
// concurrent use.
type Server struct {
	node     *Node
	tr       Transport
	clk      clock.Clock
	interval time.Duration
	log      *slog.Logger

	onFail  func(error)
	inbox   chan raftpb.Message
	calls   chan func()
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	mu      sync.Mutex
	reports []report // from the transport, for the loop
	view    view     // for readers, updated by the loop

	// Owned by the loop.
	ticks     uint64
	proposals map[ProposalID]chan<- result
	waiters   []appliedWaiter
	transfers []transfer
	failed    error
}

// view is what readers see without asking the loop.
type view struct {
	leader, term, applied uint64
	active                bool
	gone                  []uint64
	err                   error
}

type report struct {
	id          uint64
	snapshot    bool
	snapshotErr bool
	gone        bool // PeerGone
	back        bool // PeerBack
}

type result struct {
	index uint64
	err   error
}

type appliedWaiter struct {
	index uint64
	ch    chan<- error
}

type transfer struct {
	to       uint64
	deadline uint64 // in ticks
	ch       chan<- error
}

// NewServer opens the node and starts serving.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Transport == nil {
		return nil, errors.New("quorum: ServerConfig.Transport is required")
	}
	if cfg.Node.Rand == nil {
		var seed [16]byte
		crand.Read(seed[:])
		cfg.Node.Rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:]), binary.LittleEndian.Uint64(seed[8:])))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.InboxSize <= 0 {
		cfg.InboxSize = DefaultInboxSize
	}
	node, err := OpenNode(cfg.Node)
	if err != nil {
		return nil, err
	}
	s := &Server{
		node:      node,
		tr:        cfg.Transport,
		clk:       cfg.Clock,
		interval:  cfg.TickInterval,
		log:       node.log,
		onFail:    cfg.OnFail,
		inbox:     make(chan raftpb.Message, cfg.InboxSize),
		calls:     make(chan func()),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
		proposals: map[ProposalID]chan<- result{},
	}
	if err := s.tr.Start(s); err != nil {
		node.Close()
		return nil, fmt.Errorf("quorum: start the transport: %w", err)
	}
	s.process() // a sole voter leads at once
	go s.run()
	return s, nil
}

func (s *Server) run() {
	defer close(s.stopped)
	t := s.clk.NewTimer(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			s.shutdown()
			return
		case <-t.C():
			// Re-armed first: whoever sees this tick's effects knows the
			// next one is scheduled.
			t.Reset(s.interval)
			s.ticks++
			s.node.Tick()
		case m := <-s.inbox:
			s.step(m)
			for more := true; more; { // take what queued meanwhile: one fsync for all
				select {
				case m := <-s.inbox:
					s.step(m)
				default:
					more = false
				}
			}
		case f := <-s.calls:
			f()
		case <-s.wake:
		}
		s.takeReports()
		s.process()
	}
}

func (s *Server) step(m raftpb.Message) {
	if err := s.node.Step(m); err != nil && !errors.Is(err, s.failed) {
		s.log.Debug("quorum: step", "err", err)
	}
}

func (s *Server) takeReports() {
	s.mu.Lock()
	reports := s.reports
	s.reports = nil
	s.mu.Unlock()
	for _, r := range reports {
		switch {
		case r.gone:
			s.node.PeerGone(r.id)
		case r.back:
			s.node.PeerBack(r.id)
		case !r.snapshot:
			s.node.ReportUnreachable(r.id)
		case r.snapshotErr:
			s.node.ReportSnapshot(r.id, raft.SnapshotFailure)
		default:
			s.node.ReportSnapshot(r.id, raft.SnapshotFinish)
		}
	}
}

// process handles every Ready, sends, and completes waiters.
func (s *Server) process() {
	for s.failed == nil && s.node.HasReady() {
		out, err := s.node.Process()
		if err != nil {
			s.failed = err
			s.failAll(fmt.Errorf("quorum: the node stopped: %w", err))
			if s.onFail != nil {
				s.onFail(err)
			}
			break
		}
		s.tr.Send(out.Messages)
		for _, a := range out.Applied {
			if ch, ok := s.proposals[a.ID]; ok {
				ch <- result{index: a.Index}
				delete(s.proposals, a.ID)
			}
		}
		if out.LeaderChanged {
			s.failProposals(fmt.Errorf("%w: leader %d at term %d", ErrLeadershipLost, out.Leader, out.Term))
		}
		s.completeWaiters(out.AppliedIndex)
		s.checkTransfers(out.Leader)
	}
	st := s.node.rn.BasicStatus()
	if len(s.transfers) > 0 {
		s.checkTransfers(st.Lead)
	}
	s.mu.Lock()
	s.view = view{leader: st.Lead, term: st.Term, applied: s.node.applied, active: s.node.Active(), gone: s.node.Gone(), err: s.failed}
	s.mu.Unlock()
}

func (s *Server) failProposals(err error) {
	for id, ch := range s.proposals {
		ch <- result{err: err}
		delete(s.proposals, id)
	}
}

func (s *Server) completeWaiters(applied uint64) {
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if w.index <= applied {
			w.ch <- nil
		} else {
			kept = append(kept, w)
		}
	}
	s.waiters = kept
}

func (s *Server) checkTransfers(leader uint64) {
	kept := s.transfers[:0]
	for _, t := range s.transfers {
		switch {
		case leader == t.to:
			t.ch <- nil
		case leader != s.node.ID() && leader != 0:
			t.ch <- fmt.Errorf("quorum: leadership went to %d, not %d", leader, t.to)
		case s.ticks >= t.deadline:
			t.ch <- fmt.Errorf("quorum: node %d did not take the leadership within %d ticks", t.to, 2*s.node.cfg.ElectionTicks)
		default:
			kept = append(kept, t)
		}
	}
	s.transfers = kept
}

func (s *Server) failAll(err error) {
	s.failProposals(err)
	for _, w := range s.waiters {
		w.ch <- err
	}
	s.waiters = nil
	for _, t := range s.transfers {
		t.ch <- err
	}
	s.transfers = nil
}

func (s *Server) shutdown() {
	s.failAll(ErrClosed)
	s.mu.Lock()
	s.view.active = false
	if s.view.err == nil {
		s.view.err = ErrClosed
	}
	s.mu.Unlock()
}

// Close stops the server, its transport and its node. Waiting calls return
// ErrClosed.
func (s *Server) Close() error {
	first := false
	s.once.Do(func() { first = true; close(s.done) })
	<-s.stopped
	if !first {
		return nil
	}
	return errors.Join(s.tr.Close(), s.node.Close())
}
