package quorum

import (
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Status is a node's view of the quorum, for DescribeQuorum and operators.
type Status struct {
	ID      uint64
	Leader  uint64 // 0: none known
	Term    uint64
	Role    string // "StateLeader", "StateFollower", "StateCandidate", "StatePreCandidate"
	Active  bool
	Commit  uint64
	Applied uint64
	// Snapshot is the index of the last snapshot taken or received.
	Snapshot uint64
	Voters   []uint64
	Ticks    uint64 // Tick calls since the node opened
	// Peers is filled on the leader only: every voter, by id.
	Peers []PeerStatus
}

// PeerStatus is the leader's view of one voter.
type PeerStatus struct {
	ID    uint64
	Match uint64 // the highest index known replicated there
	// TicksSinceContact is how many ticks ago the leader last heard from it
	// in this term (0 for the leader itself); -1: not yet.
	TicksSinceContact int64
	State             string // raft's progress state: StateProbe, StateReplicate, StateSnapshot
}

// Status reports the node's view of the quorum.
func (n *Node) Status() Status {
	bs := n.rn.BasicStatus()
	s := Status{
		ID:       n.cfg.NodeID,
		Leader:   bs.Lead,
		Term:     bs.Term,
		Role:     bs.RaftState.String(),
		Active:   n.Active(),
		Commit:   bs.Commit,
		Applied:  n.applied,
		Snapshot: n.snapIndex,
		Voters:   n.Voters(),
		Ticks:    n.ticks,
	}
	if bs.RaftState != raft.StateLeader {
		return s
	}
	match := map[uint64]tracker.Progress{}
	n.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) { match[id] = pr })
	for _, id := range n.cfg.Voters {
		p := PeerStatus{ID: id, Match: match[id].Match, TicksSinceContact: -1, State: match[id].State.String()}
		if id == n.cfg.NodeID {
			p.TicksSinceContact = 0
		} else if t, ok := n.heard[id]; ok {
			p.TicksSinceContact = int64(n.ticks - t)
		}
		s.Peers = append(s.Peers, p)
	}
	return s
}
