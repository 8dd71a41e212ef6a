package quorum

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Output is what one Process call leaves the caller to do and to know.
type Output struct {
	// Messages are to be sent to their To. Everything they depend on (terms,
	// votes, entries) is durable: send them in any order, drop any (raft
	// retries). Every MsgSnap sent or dropped must be reported with
	// Node.ReportSnapshot.
	Messages []raftpb.Message
	// Applied are this node's own proposals applied by this call, in index
	// order.
	Applied []AppliedProposal
	// AppliedIndex is the last index applied to the StateMachine so far.
	AppliedIndex uint64
	// Leader and Term are raft's view after this call (Leader 0: unknown).
	Leader, Term uint64
	// LeaderChanged: Leader or Term differ from the previous Output's (or,
	// for the first, from the term on disk). A proposal not yet applied may
	// now never be; it may also still commit.
	LeaderChanged bool
}

// AppliedProposal is a proposal of this node and the index its entry was
// applied at.
type AppliedProposal struct {
	ID    ProposalID
	Index uint64
}

// Process handles one raft Ready, in etcd's order: it makes the Ready's
// snapshot, entries and hard state durable first (see the package
// documentation for the order), then collects the messages to send, then
// applies the committed entries to the StateMachine (and takes a snapshot
// every SnapshotEntries), then advances raft. With nothing ready it only
// reports the leader. Call it after Tick, Step, Propose, Campaign and
// TransferLeadership until HasReady is false.
func (n *Node) Process() (Output, error) {
	if n.err != nil {
		return Output{}, n.err
	}
	var out Output
	if n.rn.HasReady() {
		rd := n.rn.Ready()
		if err := n.persist(rd); err != nil {
			return Output{}, n.fail(err)
		}
		out.Messages = rd.Messages
		for _, m := range rd.Messages {
			if m.Type == raftpb.MsgVoteResp && !m.Reject {
				n.electionElapsed = 0 // as raft: give the candidate we voted for time to win
			}
		}
		if err := n.apply(rd, &out); err != nil {
			return Output{}, n.fail(err)
		}
		if err := n.maybeSnapshot(); err != nil {
			return Output{}, n.fail(err)
		}
		n.rn.Advance(rd)
		n.observe()
	}
	st := n.rn.BasicStatus()
	out.Leader, out.Term, out.AppliedIndex = st.Lead, st.Term, n.applied
	if st.Lead != n.lastLeader || st.Term != n.lastTerm {
		out.LeaderChanged = true
		if st.Lead != n.lastLeader {
			n.log.Info("quorum: leader changed", "leader", st.Lead, "term", st.Term, "was", n.lastLeader)
		}
		n.lastLeader, n.lastTerm = st.Lead, st.Term
	}
	return out, nil
}

func (n *Node) fail(err error) error {
	n.err = err
	n.leader = false
	n.log.Error("quorum: node stopped", "err", err)
	return err
}

// persist makes rd durable: snapshot, entries, hard state.
func (n *Node) persist(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		s := rd.Snapshot
		if err := n.disk.saveSnapshot(s); err != nil {
			return err
		}
		if err := n.disk.resetLog(int64(s.Metadata.Index + 1)); err != nil {
			return err
		}
		if err := n.ms.ApplySnapshot(s); err != nil {
			return fmt.Errorf("quorum: apply the snapshot at %d to raft storage: %w", s.Metadata.Index, err)
		}
	}
	if len(rd.Entries) > 0 {
		if err := n.disk.appendEntries(rd.Entries); err != nil {
			return err
		}
		if err := n.ms.Append(rd.Entries); err != nil {
			return fmt.Errorf("quorum: append to raft storage: %w", err)
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.disk.saveHardState(rd.HardState); err != nil {
			return err
		}
		if err := n.ms.SetHardState(rd.HardState); err != nil {
			return fmt.Errorf("quorum: set raft hard state: %w", err)
		}
	}
	return nil
}

// apply restores a received snapshot, then applies the committed entries.
func (n *Node) apply(rd raft.Ready, out *Output) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		s := rd.Snapshot.Metadata.Index
		if err := n.cfg.StateMachine.Restore(s, rd.Snapshot.Data); err != nil {
			return fmt.Errorf("quorum: restore the state machine from the leader's snapshot at %d: %w", s, err)
		}
		n.applied, n.snapIndex = s, s
		n.log.Info("quorum: restored a snapshot from the leader", "index", s, "term", rd.Snapshot.Metadata.Term)
	}
	for _, e := range rd.CommittedEntries {
		if e.Index <= n.applied {
			continue // raft hands out nothing twice; a snapshot can overtake
		}
		if e.Index != n.applied+1 {
			return fmt.Errorf("quorum: committed entry %d after applying %d", e.Index, n.applied)
		}
		if e.Type != raftpb.EntryNormal {
			return fmt.Errorf("%w: entry %d is a %s: the quorum does not reconfigure", ErrCorrupt, e.Index, e.Type)
		}
		if len(e.Data) > 0 {
			env, payload, err := unwrap(e.Data)
			if err != nil {
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
			if err := n.cfg.StateMachine.Apply(e.Index, payload); err != nil {
				return fmt.Errorf("quorum: apply entry %d: %w", e.Index, err)
			}
			if env.node == n.cfg.NodeID && env.incarnation == n.incarnation {
				out.Applied = append(out.Applied, AppliedProposal{ID: env.seq, Index: e.Index})
			}
		}
		n.applied = e.Index
	}
	return nil
}

// maybeSnapshot takes a snapshot once SnapshotEntries have been applied
// since the last one: SNAPSHOT first, then the log is cut CatchUpEntries
// behind it, so the log always holds what the snapshot on disk does not.
func (n *Node) maybeSnapshot() error {
	if n.applied-n.snapIndex < n.cfg.SnapshotEntries {
		return nil
	}
	i := n.applied
	data, err := n.cfg.StateMachine.Snapshot()
	if err != nil {
		return fmt.Errorf("quorum: snapshot the state machine at %d: %w", i, err)
	}
	term, err := n.ms.Term(i)
	if err != nil {
		return fmt.Errorf("quorum: term of entry %d: %w", i, err)
	}
	snap := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{ConfState: n.cs, Index: i, Term: term}}
	if err := n.disk.saveSnapshot(snap); err != nil {
		return err
	}
	if _, err := n.ms.CreateSnapshot(i, &n.cs, data); err != nil {
		return fmt.Errorf("quorum: snapshot raft storage at %d: %w", i, err)
	}
	n.snapIndex = i
	if i <= n.cfg.CatchUpEntries {
		return nil
	}
	cut := i - n.cfg.CatchUpEntries
	switch err := n.ms.Compact(cut); {
	case errors.Is(err, raft.ErrCompacted):
		return nil // already shorter (a snapshot from the leader)
	case err != nil:
		return fmt.Errorf("quorum: compact raft storage to %d: %w", cut, err)
	}
	// The storage keeps entry cut as its first (dummy) one: so does the log,
	// so that a restart rebuilds the same storage.
	if err := n.disk.log.DeleteBefore(int64(cut)); err != nil {
		return fmt.Errorf("quorum: drop raft log entries before %d: %w", cut, err)
	}
	n.log.Debug("quorum: snapshot", "index", i, "term", term, "bytes", len(data), "log_start", cut)
	return nil
}
