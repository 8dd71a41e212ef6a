// Package replication is mini-kafka's ISR replication of one partition, as
// pure state machines: a Leader (the followers' positions, the ISR and its
// changes, the high watermark) and a Follower (what to fetch, and what to do
// with the answer), with the EpochCache both keep beside the log. Events go
// in through Step, actions come out; the state machines do no I/O, read no
// clock (every event that needs the time carries Now), start no goroutine
// and never let map order decide anything, so the broker's shell and the
// simulator run exactly the same code, the simulator deterministically.
//
// The semantics are Kafka's (KIP-101, KIP-279, KIP-320, KIP-497, KIP-841,
// KIP-903, KIP-966) but stronger in one respect: under sync=always a
// follower fetches again only once what it appended is synced, so the fetch
// offset the leader counts toward the high watermark is on its disk, and
// the leader counts its own log only up to its durable end. acks=all thus
// means "on the disk of min.insync.replicas brokers", and a power loss on
// any of them cannot take back an acknowledged record (kafka-fsync).
// Under the other policies the broker does the same with "durable" meaning
// out of the process's hands (what an engine's Sync promises there), so a
// kill -9 of any of them cannot.
// Followers are served up to the leader's log end, not its durable end, so
// that the leader's fsync and the followers' copy and fsync overlap: a
// record a follower holds and the leader loses in a power loss was never
// acknowledged, and epochs settle it as any unacknowledged tail.
//
// # Leader
//
// Built by NewLeader from the metadata that made the broker leader and the
// state of its log. Events:
//
//   - FollowerFetch: answered by a FetchAnswer (error, diverging epoch, or
//     the range to serve, up to the log end); moves the follower's
//     position, maybe the HW, maybe proposes an ISR expansion.
//   - LocalAppended, LocalDurable: the local log end and durable end moved.
//   - LogStartMoved: retention moved the log start.
//   - Tick: ISR shrink of members not caught up for LagTime, AlterPartition
//     retries (NextDeadline says when one is due).
//   - AlterPartitionResult: the controller's answer to a ProposeISR.
//   - MetadataUpdate: a newer committed state of the same leader epoch.
//
// Actions: FetchAnswer, AdvanceHW, ProposeISR, SaveEpochs. Read-only state:
// Status (HW, ISR, maximal ISR, per-follower lag in offsets and time,
// under-replicated, under-min-ISR), CheckProduce (NOT_ENOUGH_REPLICAS
// before an acks=all append) and AfterAppendCheck
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND for a batch that waited).
//
// The HW is the lowest durable offset over the maximal ISR of KIP-497, the
// committed ISR together with the members of the change in flight, leader
// included; it does not move while the committed ISR is below MinISR
// (KIP-966) and never moves back. A member being removed holds the HW until
// the removal is committed; a member being added holds it from the moment
// it is proposed, because the expansion can commit at any time after, and
// from then on the joiner may be elected: it must have everything below the
// HW. One change is in flight at a time; a refused one is never resent and
// keeps counting until the metadata says what was committed.
//
// # Follower
//
// Built by NewFollower. NextFetch gives the fetch to send (none while its
// epoch is stale, or with CountDurable while its log end is not durable).
// Events: FetchResponse, LocalDurable, LogStartMoved. Actions: Append,
// Truncate (on a diverging epoch, to where the logs part, never to the HW
// alone), ResetLog (below the leader's log start), DeleteBefore (following
// the leader's start), AdvanceHW, SaveEpochs, Backoff, NeedMetadata.
//
// # Epochs
//
// Leader epochs are compared with <, never ≠ (CheckLeaderEpoch): a lower
// epoch than the receiver's is fenced (FENCED_LEADER_EPOCH, the sender is
// stale and waits for metadata), a higher one unknown (UNKNOWN_LEADER_EPOCH,
// the receiver is stale; the sender retries). Errors are kerr values.
//
// # Test-only mutations
//
// Each protective rule can be switched off by an unexported field that only
// this package's tests set (mutations.go), and the scenario it protects is
// shown to fail without it (testdata/mutations/).
package replication
