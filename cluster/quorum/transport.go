package quorum

import (
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Handler is what a Transport delivers to (a Server). Its methods never
// block: a Transport may call them from inside Send, on the Server's own
// goroutine.
type Handler interface {
	// Step takes a message from a peer. It may drop it (raft tolerates loss).
	Step(m raftpb.Message)
	// ReportUnreachable says a message to id was lost.
	ReportUnreachable(id uint64)
	// ReportSnapshot says whether a MsgSnap to id was delivered.
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
	// PeerGone says the connection id was sending on ended (not by this
	// transport closing): id's process may have died.
	PeerGone(id uint64)
	// PeerBack says id connected again: its process is alive.
	PeerBack(id uint64)
}

// Transport carries raft messages between the voters.
//
// Send must not block for long (the Server's loop calls it); it may drop
// messages, and reports a peer it cannot reach with ReportUnreachable. For
// every MsgSnap it reports ReportSnapshot once: SnapshotFinish when it
// handed the message over, SnapshotFailure when it dropped it.
type Transport interface {
	// Start begins delivering inbound messages to h. It is called once,
	// before Send.
	Start(h Handler) error
	Send(msgs []raftpb.Message)
	// Close stops delivery and releases connections.
	Close() error
}

// reportDropped tells h that m was not delivered.
func reportDropped(h Handler, m raftpb.Message) {
	h.ReportUnreachable(m.To)
	if m.Type == raftpb.MsgSnap {
		h.ReportSnapshot(m.To, raft.SnapshotFailure)
	}
}
