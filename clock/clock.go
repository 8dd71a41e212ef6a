// Package clock is the time source that everything in mini-kafka which waits
// or times out reads: group-commit flush intervals, session timeouts, ISR lag,
// election and request timeouts. Production code gets Real; tests and the
// simulator get a Manual clock and move time themselves, so nothing sleeps.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules wake-ups.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the current time on C() once d has
	// passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a single wake-up, as time.Timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
	// Reset makes the timer fire d from now.
	Reset(d time.Duration) bool
}

// Real is the system clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Manual is a clock that moves only when Advance is called. Timers whose
// deadline is reached fire during Advance, in deadline order.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManual returns a Manual clock that reads start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer schedules a send on the timer's channel at Now()+d.
func (m *Manual) NewTimer(d time.Duration) Timer {
	t := &manualTimer{m: m, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc schedules f, in its own goroutine, at Now()+d.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{m: m, fn: f}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d and fires every timer that falls due.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	target := m.now.Add(d)
	for {
		sort.Slice(m.timers, func(i, j int) bool { return m.timers[i].at.Before(m.timers[j].at) })
		if len(m.timers) == 0 || m.timers[0].at.After(target) {
			break
		}
		t := m.timers[0]
		m.timers = m.timers[1:]
		t.active = false
		if t.at.After(m.now) {
			m.now = t.at
		}
		now := m.now
		m.mu.Unlock()
		t.fire(now)
		m.mu.Lock()
	}
	m.now = target
	m.mu.Unlock()
}

// Pending reports how many timers are waiting to fire.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

type manualTimer struct {
	m      *Manual
	ch     chan time.Time
	fn     func()
	at     time.Time
	active bool
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) fire(now time.Time) {
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.removeLocked()
}

func (t *manualTimer) removeLocked() bool {
	if !t.active {
		return false
	}
	for i, o := range t.m.timers {
		if o == t {
			t.m.timers = append(t.m.timers[:i], t.m.timers[i+1:]...)
			break
		}
	}
	t.active = false
	return true
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.removeLocked()
	t.at = t.m.now.Add(d)
	t.active = true
	t.m.timers = append(t.m.timers, t)
	return was
}
