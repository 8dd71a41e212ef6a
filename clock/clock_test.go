package clock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManualTimerFiresOnlyWhenDue(t *testing.T) {
	m := clock.NewManual(epoch)
	tm := m.NewTimer(10 * time.Second)
	m.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired before its deadline")
	default:
	}
	m.Advance(time.Second)
	select {
	case at := <-tm.C():
		assert.Equal(t, epoch.Add(10*time.Second), at, "a timer reports its deadline as the time it fired")
	default:
		t.Fatal("timer did not fire at its deadline")
	}
	assert.Equal(t, 0, m.Pending())
}

func TestManualStopAndReset(t *testing.T) {
	m := clock.NewManual(epoch)
	tm := m.NewTimer(time.Second)
	assert.True(t, tm.Stop(), "Stop of a pending timer reports true")
	assert.False(t, tm.Stop(), "a second Stop reports false")
	m.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	assert.False(t, tm.Reset(time.Minute), "Reset of a stopped timer reports false")
	m.Advance(time.Minute)
	select {
	case <-tm.C():
	default:
		t.Fatal("a reset timer did not fire")
	}
}

func TestManualAfterFuncRunsInDeadlineOrder(t *testing.T) {
	m := clock.NewManual(epoch)
	var order []int
	done := make(chan int, 3)
	for _, d := range []int{3, 1, 2} {
		m.AfterFunc(time.Duration(d)*time.Second, func() { done <- d })
	}
	m.Advance(5 * time.Second)
	for range 3 {
		order = append(order, <-done)
	}
	// The callbacks run in their own goroutines, so only the set is certain;
	// the clock itself must have passed every deadline.
	assert.ElementsMatch(t, []int{1, 2, 3}, order)
	assert.Equal(t, epoch.Add(5*time.Second), m.Now())
}

func TestManualAfterFuncFiresOnce(t *testing.T) {
	m := clock.NewManual(epoch)
	var fired atomic.Int32
	inner := make(chan struct{})
	m.AfterFunc(time.Second, func() {
		fired.Add(1)
		close(inner)
	})
	m.Advance(2 * time.Second)
	<-inner
	m.Advance(time.Hour)
	require.Equal(t, int32(1), fired.Load(), "an AfterFunc timer fires once")
}

func TestRealClockTimer(t *testing.T) {
	tm := clock.Real.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("real timer never fired")
	}
}
