package replication

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Event is an input to Leader.Step or Follower.Step: one of the event types
// of this file. Every event that needs the time carries it (Now); the state
// machines read no clock.
type Event interface{ isEvent() }

// Action is an obligation Step hands back to the shell, to perform in order:
// one of the action types of this file.
type Action interface{ isAction() }

// ISRMember is a replica in a proposed ISR with the broker epoch its leader
// saw it fetch with, or -1 when unknown (KIP-903).
type ISRMember struct {
	ID          int32
	BrokerEpoch int64
}

func (m ISRMember) String() string { return fmt.Sprintf("%d@%d", m.ID, m.BrokerEpoch) }

// EpochEnd is an answer of OffsetForLeaderEpoch, and a Fetch response's
// DivergingEpoch: the largest epoch at or below the one asked for, and the
// offset where it ends on the answering replica.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// BatchInfo is what the state machines need of a stored or fetched batch:
// its offsets and its partition leader epoch, from the header (batch.Parse).
// The bytes stay with the shell.
type BatchInfo struct {
	BaseOffset int64
	LastOffset int64
	Epoch      int32
	// Corrupt: the shell's batch.Parse refused it (CRC, lengths). A fetch
	// response holding one is refused whole and fetched again; it is never
	// stored.
	Corrupt bool
}

// NextOffset is the offset after the batch.
func (b BatchInfo) NextOffset() int64 { return b.LastOffset + 1 }

// CheckLeaderEpoch compares the leader epoch a request carries with the
// receiver's: FENCED_LEADER_EPOCH when the request's is older (the sender is
// stale and should wait for metadata), UNKNOWN_LEADER_EPOCH when it is newer
// (the receiver is stale; the sender retries). A negative request epoch
// (old request versions) is not checked. Always <, never ≠: a ≠ check cannot
// tell which side must wait.
func CheckLeaderEpoch(request, current int32) error {
	switch {
	case request < 0:
		return nil
	case request < current:
		return kerr.FencedLeaderEpoch
	case request > current:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// Leader events.

// FollowerFetch is a Fetch from a follower (a replica id in the request).
type FollowerFetch struct {
	Replica int32
	// BrokerEpoch is the follower's broker epoch (Fetch v15 ReplicaState), -1
	// when not sent. Expansions carry it to the controller (KIP-903).
	BrokerEpoch int64
	// CurrentLeaderEpoch is the epoch the follower believes current, -1 when
	// not sent; checked with CheckLeaderEpoch.
	CurrentLeaderEpoch int32
	// FetchOffset is the follower's log end. With CountDurable it is also
	// what the follower has made durable (Follower.NextFetch waits for
	// LocalDurable), and that is why it may count toward the high watermark.
	FetchOffset int64
	// LastFetchedEpoch is the epoch of the follower's last batch, -1 when its
	// log is empty: checked against the leader's EpochCache.
	LastFetchedEpoch int32
	// LogStartOffset is the follower's log start (Fetch v5+), -1 when not
	// sent: what DeleteRecords waits on (Leader.LowWatermark).
	LogStartOffset int64
	Now            time.Time
}

// LocalAppended says the leader's log end moved to End (a produce was
// appended).
type LocalAppended struct{ End int64 }

// LocalDurable says the local log is durable up to End: after the log's
// Sync (an fsync under sync=always; under the other policies a wait until
// the engine handed the batches to the OS). Both roles take it.
type LocalDurable struct{ End int64 }

// LogStartMoved says the local log start moved to Start (retention,
// DeleteRecords). Both
// roles take it. The shell moves a log start only below the high watermark.
type LogStartMoved struct{ Start int64 }

// Tick lets a leader act on time: shrink the ISR of replicas that lag, retry
// an AlterPartition after its backoff. Call it every LagTime/2 or so.
type Tick struct{ Now time.Time }

// AlterPartitionResult is the controller's answer to the ProposeISR whose Seq
// it carries: on success the committed state (LeaderEpoch, PartitionEpoch,
// ISR), otherwise Err, a kerr value, or any other error for a request that
// got no answer (retried).
type AlterPartitionResult struct {
	Seq            uint64
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	Err            error
	Now            time.Time
}

// MetadataUpdate is the partition's committed state from the metadata log
// while this broker still leads it in the same leader epoch; send it on any
// change of the partition or of the eligibility of its replicas. A new
// leader epoch is not an update: the shell builds a new Leader or Follower.
type MetadataUpdate struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	ELR            []int32
	// Replicas is the partition's replica set, which a reassignment
	// changes within a leader epoch (KIP-455): a replica added is a
	// follower the leader serves and may take into the ISR once caught up;
	// one removed is served no more. Nil leaves the leader's as it is.
	Replicas []int32
	// Eligible are the brokers that may join an ISR, unfenced and not
	// shutting down (KIP-841), each with its registered broker epoch.
	Eligible []ISRMember
	// MinISR is the topic's min.insync.replicas now (it is a dynamic
	// config); 0 leaves the leader's as it is.
	MinISR int
	Now    time.Time
}

// Follower events.

// FetchResponse is the leader's answer for this partition to the fetch at
// FetchOffset. A response to an earlier fetch (FetchOffset is not the local
// end any more) is ignored, so duplicated or late responses are harmless.
type FetchResponse struct {
	FetchOffset int64
	// Err is the partition's error code as a kerr value, nil for none.
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	// DivergingEpoch is set when the leader found the fetch inconsistent with
	// its log (KIP-320): truncate, then fetch again.
	DivergingEpoch *EpochEnd
	// Batches are the fetched batches' headers, in order; the shell drops a
	// partial batch at the end of the response before it gets here.
	Batches []BatchInfo
}

func (FollowerFetch) isEvent()        {}
func (LocalAppended) isEvent()        {}
func (LocalDurable) isEvent()         {}
func (LogStartMoved) isEvent()        {}
func (Tick) isEvent()                 {}
func (AlterPartitionResult) isEvent() {}
func (MetadataUpdate) isEvent()       {}
func (FetchResponse) isEvent()        {}

// Leader actions.

// FetchAnswer is how to answer a FollowerFetch, always the first action Step
// returns for one. Err (a kerr value) is the partition's error; otherwise, a
// Diverging epoch goes back with no records; otherwise serve the batches from
// From up to To, the leader's log end (empty when From >= To: park the
// fetch until the log end moves). Followers are not capped by the high
// watermark; HighWatermark and LogStartOffset go in the response.
type FetchAnswer struct {
	Replica        int32
	Err            error
	Diverging      *EpochEnd
	From, To       int64
	HighWatermark  int64
	LogStartOffset int64
}

// AdvanceHW moves the high watermark to To: checkpoint it, wake consumers
// and acks=all producers at or below it. It never goes back.
type AdvanceHW struct{ To int64 }

// ProposeISR asks the controller, with AlterPartition, for a new ISR, made
// against LeaderEpoch and PartitionEpoch. At most one is in flight (KIP-497);
// answer it with an AlterPartitionResult carrying its Seq, to the Leader
// that made it (a new Leader numbers its proposals from 1 again). A retry
// re-emits the same proposal, Seq included.
type ProposeISR struct {
	Seq            uint64
	NewISR         []ISRMember
	LeaderEpoch    int32
	PartitionEpoch int32
}

// SaveEpochs says the EpochCache changed: write its checkpoint (Marshal)
// once the actions before it are done.
type SaveEpochs struct{}

// Follower actions.

// Truncate drops the local log from To on (engine Truncate); the local HW
// becomes min(HW, To). To is a batch boundary of both logs in every run
// this package knows of; if the engine ends elsewhere, rebuild the Follower
// from the log.
type Truncate struct{ To int64 }

// Append appends the fetched batches, contiguous with the local end, as
// they are. With CountDurable, sync them and report LocalDurable: the next
// fetch waits for it.
type Append struct{ Batches []BatchInfo }

// ResetLog empties the log and restarts it at Start (DeleteBefore past the
// end), for a follower whose end is below the leader's log start.
type ResetLog struct{ Start int64 }

// DeleteBefore moves the local log start to Offset, following the leader's
// (never past the local HW).
type DeleteBefore struct{ Offset int64 }

// Backoff says the fetch failed for now (Err says why): fetch again after
// replica.fetch.backoff.ms, refreshing metadata if Err names a leader
// problem.
type Backoff struct{ Err error }

// NeedMetadata says this follower is stale (Err says why): stop fetching
// until new metadata replaces it.
type NeedMetadata struct{ Err error }

func (FetchAnswer) isAction()  {}
func (AdvanceHW) isAction()    {}
func (ProposeISR) isAction()   {}
func (SaveEpochs) isAction()   {}
func (Truncate) isAction()     {}
func (Append) isAction()       {}
func (ResetLog) isAction()     {}
func (DeleteBefore) isAction() {}
func (Backoff) isAction()      {}
func (NeedMetadata) isAction() {}
