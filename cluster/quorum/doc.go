// Package quorum is the controller quorum's raft: etcd's raft (go.etcd.io/raft/v3
// RawNode) wrapped as a deterministic core, Node, and a thin goroutine shell,
// Server, with the transports that carry raft messages between controllers.
//
// What it replicates is opaque: a StateMachine (the metadata state machine in
// package cluster) gets each committed proposal's payload, in index order.
//
// # Layers
//
//   - Node is synchronous and deterministic: no goroutines, no clock, no I/O
//     but through the injected filesystem and log engine, randomness only from
//     NodeConfig.Rand. Tick, Step, Propose, Campaign and TransferLeadership
//     feed it; Process handles one raft Ready and returns an Output (messages
//     to send, this node's proposals applied with their indexes, the leader
//     and term). The simulator drives Nodes directly.
//   - Server owns a Node, a ticker on the injected clock.Clock and a
//     Transport, on one goroutine. Propose returns once the entry is
//     committed and applied locally, fails at once with ErrNotLeader (a
//     *NotLeaderError naming the leader) unless the server is the Active
//     leader, and with ErrLeadershipLost when the leader or term changes
//     while it waits (the entry may still commit).
//   - Transport carries messages: MemNetwork in tests, TCPTransport in
//     production. TCPTransport never owns a listener: the controller port is
//     shared with Kafka-protocol APIs, so the broker's accept loop calls
//     PeekConn, which reads the first 4 bytes and returns a net.Conn that
//     replays them, and hands connections that start with Magic (negative as
//     a big-endian int32, so never a Kafka frame length) to ServeConn. Every
//     connection starts with a handshake that carries the cluster id and a
//     digest of the voter list; a mismatch is refused and logged on both
//     sides ("cluster id mismatch: local X, peer Y").
//
// A proposal's entry carries an envelope (node id, a random incarnation
// drawn at open, a sequence number) so that only its own entry completes a
// waiter; the StateMachine sees the payload only.
//
// # Determinism
//
// etcd raft draws its randomized election timeout from crypto/rand. A Node
// therefore never ticks raft unless it is the leader (whose ticks only send
// heartbeats and time out a leadership transfer): followers and candidates
// run the Node's own election timer, drawn from NodeConfig.Rand in [E, 2E)
// ticks, and call Campaign when it expires. CheckQuorum is off (it needs
// raft's follower ticks) and PreVote on; the Node keeps a lease instead: a
// leader is Active only while it has heard from a quorum, itself included,
// within the last E ticks, and a follower that heard from its leader within E
// ticks ignores (pre-)votes for a higher term, as etcd's CheckQuorum does.
// A transport that sees a peer's connection end says so (PeerGone): a
// follower whose leader that was gives up the lease and campaigns within
// 1 + 2 × its rank ticks, so a killed leader is replaced in about a tick,
// not after an election timeout. Maps are iterated in sorted order only.
//
// # On disk
//
// Under NodeConfig.Dir:
//
//	META        cluster id, node id, the voter list: written once, at bootstrap
//	HARDSTATE   raft's term, vote and commit index
//	SNAPSHOT    the last snapshot: index, term, conf state, StateMachine bytes
//	log/        a LogEngine (NodeConfig.Engine): offset i holds raft entry i,
//	            one batch of one record per entry, bytes = raftpb.Entry.Marshal
//
// META, HARDSTATE and SNAPSHOT are small checksummed files, each replaced
// atomically (engine.WriteFileAtomic):
//
//	+-------+---------+--------+-------------------+---------+
//	| magic | version | length |      payload      |  CRC    |
//	|   4   |  4 (=1) |   4    |  length bytes     |    4    |
//	+-------+---------+--------+-------------------+---------+
//
// Integers are big-endian; CRC is the CRC-32C of everything before it. The
// payloads are raftpb.HardState and raftpb.Snapshot marshalled, and META's
// own encoding (see meta.go). A fresh log starts at offset 1 (DeleteBefore(1)).
//
// # Persistence order
//
// Each Ready is made durable before any of its messages leaves (a controller
// that sends before it persists can vote twice after a crash), in this order:
//
//  1. a snapshot received from the leader: SNAPSHOT, then the log emptied to
//     start just after it (Truncate, DeleteBefore above the end);
//  2. entries: Truncate(first) when a new leader overwrites our uncommitted
//     tail, Append, then Sync under engine.SyncAlways (durable);
//  3. HARDSTATE.
//
// Then the messages are collected, committed entries applied, and the raft
// node advanced; Process returns the messages with what it applied, and the
// caller sends them then (etcd allows sending before applying: ours is the
// simpler, equally safe order, at the cost of the apply's latency).
// HARDSTATE is rewritten whenever it changes, commit index included, so that
// a restart re-applies everything it had applied without waiting for a
// leader. Every SnapshotEntries applied entries the Node writes
// SNAPSHOT first and only then drops log entries older than CatchUpEntries
// behind it, so the log always holds what the snapshot on disk does not.
//
// Recovery (OpenNode) reads SNAPSHOT and restores the StateMachine from it;
// keeps the log if it holds the snapshot's last entry (same index and term)
// or starts right after it, and otherwise finishes the interrupted install
// by emptying it; reads HARDSTATE, raising its commit index to the snapshot's
// and its term to the log's last term (a crash between steps 2 and 3 can
// leave it behind, and a term never used to vote is safe to adopt); and then
// creates the raft node with Applied at the snapshot, so that the committed
// entries after it are applied again, in order, exactly once.
package quorum
