package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/engine"
)

// errorCode maps an error from the log layer to the Kafka error code a
// client acts on. The log layer returns kerr values for Kafka-level problems;
// engine sentinels and context ends are translated here.
func errorCode(ctx context.Context, err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, errTimedOut) || (ctx != nil && errors.Is(context.Cause(ctx), errTimedOut)):
		return kerr.RequestTimedOut.Code
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

// errorMessage is the text for a response's ErrorMessage field, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
