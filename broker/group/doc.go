// Package group is mini-kafka's consumer group coordinator: Kafka's classic
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and committed
// offsets (OffsetCommit, OffsetFetch), with DescribeGroups, ListGroups and
// DeleteGroups.
//
// # Shape
//
// Each group is a Group: a state machine in the manner of etcd raft. It does
// no I/O, starts no goroutines and reads no clock. A step (Join, Sync,
// Heartbeat, Leave, CheckCommit, Delete, Tick) takes the current time as an
// argument; what it cannot answer at once (a JoinGroup waiting for the
// rebalance, a SyncGroup waiting for the leader) it parks under a Waiter and
// answers later through Ready, together with Stores: records to write to
// __consumer_offsets before the attached replies may go out. NextDeadline
// says when Tick has work to do (session expiry, rebalance and sync
// timeouts, the initial rebalance delay).
//
// The Coordinator is the shell: one lock per group, a clock timer per group
// set to NextDeadline, the parked requests' channels, and the log. Its
// methods take and return kmsg requests and responses; api_*.go are the only
// files that convert between kmsg and the machine's types. The Start* forms
// split a call in two: the step (and, for a commit, the append to the log)
// happens when called, in the caller's order, and the returned function
// waits for the answer; the broker steps a connection's requests in the
// order they arrived and waits on its own goroutines. The offsets of
// transactions also come as events, for a driver that waits on no
// goroutine (the simulator): StartTxnOffsetCommit appends and returns the
// offset to wait for and the answer to give after; StartWriteMarker and
// MarkerDurable are a marker appended and, later, committed.
//
// # Protocol
//
// States Empty, PreparingRebalance, CompletingRebalance, Stable, Dead, with
// Kafka's transitions and error codes: MEMBER_ID_REQUIRED for a new dynamic
// member (JoinGroup v4+), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL
// (the protocol type must match and some protocol must be common to every
// member; the one chosen is Kafka's vote). Static members
// (group.instance.id) keep their slot and assignment across a restart:
// rejoining a Stable group with an unchanged protocol costs no rebalance
// (the leader is told SkipAssignment on JoinGroup v9+, and rebalances on
// older versions, which cannot express it). Assignors run in the clients;
// the cooperative (incremental) flow needs nothing more than this: a member
// whose subscription metadata changed (its owned partitions after a
// revocation) rejoins and triggers the follow-up rebalance.
//
// # Durability
//
// Offsets and group metadata are records in the __consumer_offsets topic,
// inside ordinary RecordBatch v2 batches, in Kafka's own key and value
// formats (kmsg.OffsetCommitKey/Value, GroupMetadataKey/Value): the latest
// record per key wins and a nil value is a tombstone. A commit is answered,
// and becomes visible to OffsetFetch, only after its batch is durable. The
// group's metadata is written when a generation is assigned (before the
// SyncGroup answers), when the group empties, and tombstoned when it is
// deleted. Open replays the log: members of the last stored generation come
// back Stable with fresh sessions, so clients that keep heartbeating go on
// without a rebalance.
//
// # Compaction
//
// The coordinator is the only writer of __consumer_offsets (Produce refuses
// internal topics) and keeps, beside the groups, the latest value of every
// key of the log (coordlog.Keyed's live values: what replay would yield, key by key).
// Once the log holds CompactRatio (4) records per live key and at least
// CompactMinBytes (16 MiB), it compacts in the background: it writes a
// fresh copy of every live record at the log end, waits until the copy is
// durable, then moves the log start to where the copy began
// (Log.DeleteBefore; the broker's partition layer does it on every engine,
// while retention keeps ignoring internal topics). Replay of the compacted
// log gives exactly the state replay gave before, and a crash at any point
// leaves a log that does too; compact.go has the argument. Commits go on
// during a compaction, in log order. So the log stays within about four
// times the live set, and so do restart time and disk use (the engine
// reclaims the space at its own granularity). LogStats reports it.
//
// # Limits (Config)
//
// Group ids up to 1024 bytes (INVALID_GROUP_ID beyond; "" is refused where
// Kafka refuses it); a member's protocol metadata and each assignment up to
// 1 MiB (INVALID_REQUEST); offset metadata up to 4096 bytes
// (OFFSET_METADATA_TOO_LARGE); 1000 members per group
// (GROUP_MAX_SIZE_REACHED); session timeouts within [6 s, 30 min]
// (INVALID_SESSION_TIMEOUT; the broker's Config.Groups can move both
// bounds); initial rebalance delay 250 ms. Offsets of a
// group with no members expire 7 days after it emptied (or after the
// commit, if later), as Kafka's offsets.retention.minutes; tombstones make
// the expiry durable.
//
// # Not done
//
// __consumer_offsets is one partition. Compaction keeps the live set in
// memory twice (the groups' offsets and the Keyed log's encoded values):
// about 100 bytes per committed partition.
package group
