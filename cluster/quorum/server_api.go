package quorum

import (
	"context"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// call runs f on the loop.
func (s *Server) call(ctx context.Context, f func()) error {
	select {
	case s.calls <- f:
		return nil
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await runs f on the loop and returns the error that f, or the loop
// later, sends on ch (buffered: its one send never blocks the loop), or
// ctx's if it ends first.
func (s *Server) await(ctx context.Context, f func(ch chan<- error)) error {
	ch := make(chan error, 1)
	if err := s.call(ctx, func() { f(ch) }); err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Propose replicates payload and returns its index once the entry is
// committed and applied here. It fails at once with a *NotLeaderError
// (errors.Is ErrNotLeader) unless this server is the Active leader, and
// with ErrLeadershipLost if the leader or term changes first: the entry may
// still commit then. If ctx ends first, the entry may commit too.
func (s *Server) Propose(ctx context.Context, payload []byte) (uint64, error) {
	ch := make(chan result, 1)
	err := s.call(ctx, func() {
		if s.failed != nil {
			ch <- result{err: s.failed}
			return
		}
		if !s.node.Active() {
			st := s.node.rn.BasicStatus()
			ch <- result{err: &NotLeaderError{Leader: st.Lead, Term: st.Term}}
			return
		}
		id, err := s.node.Propose(payload)
		if err != nil {
			ch <- result{err: err}
			return
		}
		s.proposals[id] = ch
	})
	if err != nil {
		return 0, err
	}
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// WaitApplied returns once every entry up to index has been applied here.
func (s *Server) WaitApplied(ctx context.Context, index uint64) error {
	s.mu.Lock()
	v := s.view
	s.mu.Unlock()
	if v.applied >= index {
		return nil
	}
	return s.await(ctx, func(ch chan<- error) {
		switch {
		case s.failed != nil:
			ch <- s.failed
		case s.node.applied >= index:
			ch <- nil
		default:
			s.waiters = append(s.waiters, appliedWaiter{index: index, ch: ch})
		}
	})
}

// Leader returns the leader this server knows of (0: none) and the term.
func (s *Server) Leader() (id, term uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.leader, s.view.term
}

// Gone lists the peers whose connections ended and that have neither
// connected again nor sent anything since, as of its last event (see
// Node.Gone).
func (s *Server) Gone() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.gone
}

// Active reports whether this server is the leader with a live quorum, as of
// its last event: the controller serves only while it is.
func (s *Server) Active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.active
}

// Status is the node's Status, from the loop. A closed server reports its
// id and voters only.
func (s *Server) Status() Status {
	ch := make(chan Status, 1)
	if err := s.call(context.Background(), func() { ch <- s.node.Status() }); err != nil {
		return Status{ID: s.node.ID(), Voters: s.node.Voters()}
	}
	return <-ch
}

// TransferLeadership hands the leadership to voter to (a controlled
// shutdown of the active controller) and returns once to leads. It fails
// with ErrNotLeader unless this server is the Active leader, and if to has
// not taken over within 2E ticks.
func (s *Server) TransferLeadership(ctx context.Context, to uint64) error {
	return s.await(ctx, func(ch chan<- error) {
		switch {
		case s.failed != nil:
			ch <- s.failed
		case !s.node.Active():
			st := s.node.rn.BasicStatus()
			ch <- &NotLeaderError{Leader: st.Lead, Term: st.Term}
		case to == s.node.ID():
			ch <- nil
		case !slices.Contains(s.node.cfg.Voters, to):
			ch <- fmt.Errorf("quorum: %d is not a voter %v", to, s.node.cfg.Voters)
		default:
			s.node.TransferLeadership(to)
			deadline := s.ticks + 2*uint64(s.node.cfg.ElectionTicks)
			s.transfers = append(s.transfers, transfer{to: to, deadline: deadline, ch: ch})
		}
	})
}

// Step takes a message from the transport. It never blocks: when the loop
// is behind, the message is dropped (raft resends).
func (s *Server) Step(m raftpb.Message) {
	select {
	case <-s.done:
	case s.inbox <- m:
	default:
		s.log.Debug("quorum: inbox full, dropped a message", "type", m.Type, "from", m.From)
	}
}

// ReportUnreachable implements Handler.
func (s *Server) ReportUnreachable(id uint64) { s.addReport(report{id: id}) }

// PeerGone implements Handler.
func (s *Server) PeerGone(id uint64) { s.addReport(report{id: id, gone: true}) }

// PeerBack implements Handler.
func (s *Server) PeerBack(id uint64) { s.addReport(report{id: id, back: true}) }

// ReportSnapshot implements Handler.
func (s *Server) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	s.addReport(report{id: id, snapshot: true, snapshotErr: status == raft.SnapshotFailure})
}

// addReport queues a report for the loop without blocking (the transport
// may call it from the loop itself) and without dropping it: a leader that
// never hears how a snapshot went stops replicating to that follower.
func (s *Server) addReport(r report) {
	s.mu.Lock()
	s.reports = append(s.reports, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
