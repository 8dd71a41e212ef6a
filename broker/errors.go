package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/node"
)

// errorCode maps an error from the log layer to the Kafka error code a
// client acts on: a request's own timeout is REQUEST_TIMED_OUT, the rest is
// node.ErrorCode (kerr values as they are, engine sentinels and context
// ends translated).
func errorCode(ctx context.Context, err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) && (errors.Is(err, errTimedOut) || (ctx != nil && errors.Is(context.Cause(ctx), errTimedOut))) {
		return kerr.RequestTimedOut.Code
	}
	return node.ErrorCode(err) // the node shell's translation, one place for both
}

// errorMessage is the text for a response's ErrorMessage field, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
