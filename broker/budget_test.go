package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
)

func TestBudget(t *testing.T) {
	ctx := context.Background()
	t.Run("within the limit at once", func(t *testing.T) {
		b := newBudget(100)
		require.NoError(t, b.acquire(ctx, 60))
		require.NoError(t, b.acquire(ctx, 40))
		assert.Equal(t, int64(100), b.inUse())
		b.release(100)
		assert.Zero(t, b.inUse())
	})
	t.Run("a frame larger than the budget enters alone", func(t *testing.T) {
		b := newBudget(100)
		require.NoError(t, b.acquire(ctx, 500))
		b.release(500)
	})
	t.Run("waits in order and wakes on release", func(t *testing.T) {
		b := newBudget(100)
		require.NoError(t, b.acquire(ctx, 90))
		got := make(chan int, 2)
		go func() { require.NoError(t, b.acquire(ctx, 50)); got <- 1 }()
		require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 1 }, 10*time.Second, time.Millisecond, "first waiter queued")
		go func() { require.NoError(t, b.acquire(ctx, 5)); got <- 2 }()
		require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 2 }, 10*time.Second, time.Millisecond, "second waiter queued")
		assert.Equal(t, int64(90), b.inUse(), "FIFO: the 5 bytes that would fit wait behind the 50 that do not")
		b.release(90)
		<-got
		<-got
		assert.Equal(t, int64(55), b.inUse())
	})
	t.Run("cancelled wait takes nothing", func(t *testing.T) {
		b := newBudget(10)
		require.NoError(t, b.acquire(ctx, 10))
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error)
		go func() { errc <- b.acquire(cctx, 5) }()
		require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 1 }, 10*time.Second, time.Millisecond, "waiter queued")
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		b.release(10)
		assert.Zero(t, b.inUse())
	})
}

func TestWatchdog(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	var fired atomic.Int32
	w := newWatchdog(clk, func() { fired.Add(1) })

	w.arm(time.Second)
	clk.Advance(999 * time.Millisecond)
	assert.Zero(t, fired.Load(), "not yet")
	w.arm(time.Second) // re-armed: counts from now
	clk.Advance(500 * time.Millisecond)
	assert.Zero(t, fired.Load(), "re-arming restarts the countdown")
	w.disarm()
	clk.Advance(time.Hour)
	assert.Zero(t, fired.Load(), "disarmed")
	w.arm(time.Second)
	clk.Advance(time.Second)
	require.Eventually(t, func() bool { return fired.Load() == 1 }, 10*time.Second, time.Millisecond, "watchdog fired")
}
