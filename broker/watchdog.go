package broker

import (
	"sync"
	"time"

	"github.com/minikafka/minikafka/clock"
)

// watchdog runs onFire if it stays armed for the armed duration. Connections
// use it for read and write deadlines on the injected clock (net deadlines
// read the wall clock, which tests cannot move): firing sets a deadline in
// the past so the blocked read or write returns at once.
type watchdog struct {
	clk    clock.Clock
	onFire func()

	mu    sync.Mutex
	gen   uint64 // bumped by every arm and disarm; a stale timer sees a newer gen
	timer clock.Timer
}

func newWatchdog(clk clock.Clock, onFire func()) *watchdog {
	return &watchdog{clk: clk, onFire: onFire}
}

// arm (re)starts the countdown: onFire runs after d unless arm or disarm is
// called first. d <= 0 disarms.
func (w *watchdog) arm(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if d <= 0 {
		return
	}
	gen := w.gen
	w.timer = w.clk.AfterFunc(d, func() { w.expire(gen) })
}

func (w *watchdog) disarm() { w.arm(0) }

func (w *watchdog) expire(gen uint64) {
	// onFire runs under the lock so that an arm or disarm that returned
	// before it cannot be overtaken by a stale timer. It must not block.
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen == w.gen {
		w.onFire()
	}
}

// pastDeadline is a deadline that has always passed.
var pastDeadline = time.Unix(1, 0)
