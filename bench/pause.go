package bench

import (
	"context"
	"time"
)

// Pause sleeps d unless ctx ends first, and reports whether it slept the
// whole time: a benchmark's wait or poll interval, not a test's.
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
