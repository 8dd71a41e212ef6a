package broker

import (
	"context"
	"errors"
	"time"

	"github.com/minikafka/minikafka/clock"
)

// A request's own timeout (Produce's TimeoutMillis, Fetch's MaxWaitMillis)
// runs on the injected clock, and is told apart from the connection or the
// server going away by its cause.

// errTimedOut is the cause of a context ended by a request's own timeout
// (as opposed to the connection or the server going away).
var errTimedOut = errors.New("request timed out")

// withTimeout derives a context that ends after d on clk, with errTimedOut as
// its cause. d <= 0 means no timeout.
func withTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if d <= 0 {
		return ctx, func() { cancel(nil) }
	}
	t := clk.AfterFunc(d, func() { cancel(errTimedOut) })
	return ctx, func() { t.Stop(); cancel(nil) }
}
