package node

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
)

// ErrorCode maps an error from the partition layer to the Kafka error code
// a client or follower acts on. The partition layer returns kerr values for
// Kafka-level problems; engine sentinels and context ends are translated
// here.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled):
		// The partition is going away (shutdown, topic deleted): the
		// client refreshes metadata and retries.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, engine.ErrEmptyBatch):
		return kerr.InvalidRecord.Code
	default:
		// engine.ErrCorrupt, I/O errors: the log is not usable as it is.
		return kerr.KafkaStorageError.Code
	}
}

// sortedKeys are m's keys in the partition manager's order, so that what
// a driver does with them never depends on map order.
func sortedKeys[V any](m map[partition.Key]V) []partition.Key {
	out := make([]partition.Key, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, partition.CompareKeys)
	return out
}
