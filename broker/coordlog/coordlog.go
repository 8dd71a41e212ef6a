// Package coordlog is what the broker's coordinators (consumer groups,
// transactions) share about the internal partition each keeps its state
// in: the Log they write to, and how a failed write is answered.
package coordlog

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/engine"
)

// Log is an internal topic's partition as its coordinator uses it: the
// group coordinator's __consumer_offsets, the transaction coordinator's
// __transaction_state. The broker satisfies it with the partition layer;
// tests with grouptest.Log.
type Log interface {
	// Append appends one RecordBatch v2 (its base offset is assigned by the
	// log) and returns the offset just past it, as soon as the batch is
	// ordered; it need not be durable yet.
	Append(batch []byte) (end int64, err error)
	// WaitDurable returns once every batch below end is durable: for the
	// broker, committed (below the high watermark, on every ISR member),
	// so that it survives the partition's leadership moving.
	WaitDurable(ctx context.Context, end int64) error
	// Read returns whole stored batches, concatenated, starting with the one
	// that holds offset, about maxBytes of them; nothing at the end.
	Read(offset int64, maxBytes int) ([]byte, error)
	// StartOffset is the first offset Read accepts.
	StartOffset() int64
	// DeleteBefore moves the log start to offset, durably (compaction).
	// offset is never past an end that WaitDurable returned for.
	DeleteBefore(ctx context.Context, offset int64) error
}

// ErrorCode maps a failed write of a coordinator to what Kafka answers: retriable
// COORDINATOR_NOT_AVAILABLE when the log is going away, the log's own Kafka
// error if it has one, UNKNOWN_SERVER_ERROR otherwise.
func ErrorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge), errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.InvalidCommitOffsetSize.Code
	// As Kafka answers a coordinator's write that its log refused: retry here
	// later, or find the coordinator again.
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend),
		errors.Is(err, kerr.RequestTimedOut), errors.Is(err, kerr.UnknownTopicOrPartition):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.KafkaStorageError):
		return kerr.NotCoordinator.Code
	case errors.As(err, &ke):
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
