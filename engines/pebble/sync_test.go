package pebble

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedFlush is a flush whose calls block until release is closed, so a
// test can queue waiters behind a flush in progress.
type gatedFlush struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
	covered atomic.Uint64
	err     error
}

func newGatedFlush(covered uint64) *gatedFlush {
	f := &gatedFlush{started: make(chan struct{}, 100), release: make(chan struct{})}
	f.covered.Store(covered)
	return f
}

func (f *gatedFlush) flush() (uint64, error) {
	f.calls.Add(1)
	covered := f.covered.Load()
	f.started <- struct{}{}
	<-f.release
	return covered, f.err
}

// queued polls until n callers wait for the next round.
func queued(t *testing.T, g *groupSync, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.next != nil && g.next.waiters == n
	}, 5*time.Second, time.Millisecond, "%d waiters queue for the next flush", n)
}

func TestGroupSyncSharesOneFlush(t *testing.T) {
	f := newGatedFlush(10)
	g := &groupSync{flush: f.flush}
	first := make(chan error, 1)
	go func() { first <- g.wait(context.Background(), 5) }()
	<-f.started // the first flush is running; everyone after queues

	const waiters = 50
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.wait(context.Background(), uint64(1+i%10))
		}()
	}
	queued(t, g, waiters)
	close(f.release)
	require.NoError(t, <-first)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, int32(2), f.calls.Load(), "51 waiters cost two flushes: the running one and one for all who queued behind it")
	assert.NoError(t, g.wait(context.Background(), 10), "an end already covered needs no flush")
	assert.Equal(t, int32(2), f.calls.Load())
}

func TestGroupSyncContextEndsTheWait(t *testing.T) {
	f := newGatedFlush(10)
	g := &groupSync{flush: f.flush}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx, 5) }()
	<-f.started
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled, "a waiter whose context ends returns while the flush still runs")
	close(f.release)
	assert.NoError(t, g.wait(context.Background(), 10), "a later wait is served once the flush is released")
}

func TestGroupSyncFailureReachesEveryWaiter(t *testing.T) {
	boom := errors.New("fsync failed")
	f := newGatedFlush(10)
	f.err = boom
	g := &groupSync{flush: f.flush}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- g.wait(context.Background(), 5) }()
	}
	<-f.started
	close(f.release) // those that queued behind the first flush get a second, also failing
	for range 3 {
		assert.ErrorIs(t, <-errs, boom, "every waiter of a failed flush gets its error")
	}
	assert.False(t, g.covered(1), "a failed flush makes nothing durable")
}

func TestGroupSyncCoversOnlyWhatWasNumberedBefore(t *testing.T) {
	f := newGatedFlush(50) // the flush read the sequence at 50
	g := &groupSync{flush: f.flush}
	done := make(chan error, 1)
	go func() { done <- g.wait(context.Background(), 50) }()
	<-f.started
	later := make(chan error, 1)
	go func() { later <- g.wait(context.Background(), 51) }() // numbered after the flush began
	queued(t, g, 1)
	f.covered.Store(51)
	close(f.release)
	require.NoError(t, <-done)
	require.NoError(t, <-later)
	assert.Equal(t, int32(2), f.calls.Load(), "a write numbered after a flush began waits for the next")
	g.advance(60)
	assert.True(t, g.covered(60), "a synced write's advance covers what was numbered before it")
}
