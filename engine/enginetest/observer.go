package enginetest

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
)

// syncRecorder is an Observer that keeps every event.
type syncRecorder struct {
	mu     sync.Mutex
	events []engine.SyncEvent
}

func (r *syncRecorder) Synced(ev engine.SyncEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *syncRecorder) snapshot() []engine.SyncEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.SyncEvent(nil), r.events...)
}

// counted sums Batches and Bytes over the events so far.
func (r *syncRecorder) counted() (batches int, bytes int64) {
	for _, ev := range r.snapshot() {
		batches += ev.Batches
		bytes += ev.Bytes
	}
	return batches, bytes
}

// checkEvents reports every event that breaks the contract for a run
// without failures, and that the events count exactly the appends.
func (r *syncRecorder) checkEvents(t *testing.T, appends int, bytes int64, what string) {
	t.Helper()
	for i, ev := range r.snapshot() {
		assert.NoError(t, ev.Err, "%s: event %d: no round failed", what, i)
		assert.GreaterOrEqual(t, ev.Batches, 1, "contract: an event without an Err covers at least one append (%s, event %d: %+v)", what, i, ev)
		assert.GreaterOrEqual(t, ev.Bytes, int64(ev.Batches), "contract: an event's Bytes are the Data bytes of its appends, at least one each (%s, event %d: %+v)", what, i, ev)
		assert.GreaterOrEqual(t, ev.Duration, time.Duration(0), "contract: a round's Duration is not negative (%s, event %d)", what, i)
	}
	b, n := r.counted()
	assert.Equal(t, appends, b, "contract: events count every append made durable exactly once (%s): summed Batches", what)
	assert.Equal(t, bytes, n, "contract: events count every append's bytes exactly once (%s): summed Bytes", what)
}

// testObserver checks the Observer contract under each sync policy.
func testObserver(t *testing.T, h *harness) {
	h.needDurable()
	t.Run("SyncAlways", func(t *testing.T) { observeAlways(t, h.sub(t)) })
	t.Run("SyncInterval", func(t *testing.T) { observeInterval(t, h.sub(t)) })
	t.Run("SyncNever", func(t *testing.T) { observeNever(t, h.sub(t)) })
	t.Run("FailedSync", func(t *testing.T) { observeFailure(t, h.d, h.open) })
}

// sub returns a harness of the same driver on a fresh directory, closed
// when t ends.
func (h *harness) sub(t *testing.T) *harness {
	s := &harness{t: t, d: h.d, open: h.open, dir: filepath.Join(t.TempDir(), "log")}
	t.Cleanup(s.closeAll)
	return s
}

// observeAlways: every Sync that returns has been counted, one append at a
// time and under concurrent group commit; a Close with nothing new to sync
// reports nothing.
func observeAlways(t *testing.T, h *harness) {
	rec := &syncRecorder{}
	e := h.openWith(engine.Options{Sync: engine.SyncAlways, Observer: rec})
	ctx := context.Background()
	appends, bytes := 0, int64(0)
	for i := range 20 {
		b := Batch(e.EndOffset(), int32(1+i%3), 12+37*i)
		require.NoError(t, e.Append(b))
		appends, bytes = appends+1, bytes+int64(len(b.Data))
		require.NoError(t, e.Sync(ctx, e.EndOffset()))
		got, gotBytes := rec.counted()
		assert.Equal(t, appends, got, "contract: once Sync returns, events have counted every append below its end (append %d)", i)
		assert.Equal(t, bytes, gotBytes, "contract: events count the Data bytes of the appends they cover (append %d)", i)
	}

	// Concurrent writers: appends are ordered under a lock, Syncs are not,
	// so rounds can cover several appends.
	const writers, each = 4, 25
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				b := Batch(e.EndOffset(), 1, 100+w*10+i)
				err := e.Append(b)
				if err == nil {
					appends, bytes = appends+1, bytes+int64(len(b.Data))
				}
				mine, end := appends, e.EndOffset()
				mu.Unlock()
				if !assert.NoError(t, err, "Append") {
					return
				}
				if !assert.NoError(t, e.Sync(ctx, end), "Sync") {
					return
				}
				got, _ := rec.counted()
				assert.GreaterOrEqual(t, got, mine, "contract: once Sync returns under concurrent writers, events have counted every append below its end")
			}
		}()
	}
	wg.Wait()
	rec.checkEvents(t, appends, bytes, "SyncAlways")
	var d time.Duration
	for _, ev := range rec.snapshot() {
		d += ev.Duration
	}
	assert.Positive(t, d, "plausible: rounds that fsync take some time on the real clock")

	before := len(rec.snapshot())
	require.NoError(t, e.Close())
	assert.Len(t, rec.snapshot(), before, "contract: a Close with nothing new to sync reports no round")
}

// observeInterval: the interval flusher's round reports what it made
// durable, and Close what was left.
func observeInterval(t *testing.T, h *harness) {
	rec := &syncRecorder{}
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	const interval = time.Second
	e := h.openWith(engine.Options{Sync: engine.SyncInterval, SyncInterval: interval, Clock: clk, Observer: rec})
	appends, bytes := 0, int64(0)
	for i := range 10 {
		b := Batch(e.EndOffset(), 2, 50+i)
		require.NoError(t, e.Append(b))
		appends, bytes = appends+1, bytes+int64(len(b.Data))
	}
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	clk.Advance(interval)
	deadline := time.Now().Add(10 * time.Second)
	for got, _ := rec.counted(); got < appends; got, _ = rec.counted() {
		require.True(t, time.Now().Before(deadline), "contract: the interval flusher's round reports the appends it made durable (%d of %d counted)", got, appends)
		time.Sleep(time.Millisecond)
	}
	rec.checkEvents(t, appends, bytes, "SyncInterval, after one interval")

	for i := range 5 {
		b := Batch(e.EndOffset(), 1, 300+i)
		require.NoError(t, e.Append(b))
		appends, bytes = appends+1, bytes+int64(len(b.Data))
	}
	require.NoError(t, e.Close())
	rec.checkEvents(t, appends, bytes, "SyncInterval, after Close")
}

// observeNever: nothing is synced before Close, which reports everything.
func observeNever(t *testing.T, h *harness) {
	rec := &syncRecorder{}
	e := h.openWith(engine.Options{Sync: engine.SyncNever, Observer: rec})
	appends, bytes := 0, int64(0)
	for i := range 10 {
		b := Batch(e.EndOffset(), 3, 80+i)
		require.NoError(t, e.Append(b))
		appends, bytes = appends+1, bytes+int64(len(b.Data))
	}
	require.NoError(t, e.Close())
	rec.checkEvents(t, appends, bytes, "SyncNever, after Close")
}

// failingSyncs is an in-memory filesystem whose file and directory syncs
// fail with errorfs.ErrInjected once failing is set; everything else works.
func failingSyncs(failing *atomic.Bool) vfs.FS {
	return errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if failing.Load() {
				return errorfs.ErrInjected
			}
		}
		return nil
	}))
}

// observeFailure: a round whose fsync fails is reported once, with its
// error, and the engine, failed, makes no more rounds.
func observeFailure(t *testing.T, d engine.Driver, open engine.OpenFunc) {
	if !d.Caps.CustomFS {
		t.Skipf("engine %s does not declare CustomFS: no fsync failure can be injected", d.Name)
	}
	var failing atomic.Bool
	fs := failingSyncs(&failing)
	rec := &syncRecorder{}
	e, err := open("/log", engine.Options{FS: fs, Sync: engine.SyncAlways, Observer: rec})
	require.NoError(t, err)
	defer func() { _ = e.Close() }() // it reports the failure
	ctx := context.Background()
	appendN(t, e, 3, 1, 100)
	require.NoError(t, e.Sync(ctx, e.EndOffset()))
	rec.checkEvents(t, 3, 300, "before the failure")
	before := len(rec.snapshot())

	failing.Store(true)
	if err := e.Append(Batch(e.EndOffset(), 1, 100)); err == nil {
		require.Error(t, e.Sync(ctx, e.EndOffset()), "a Sync whose fsync fails fails")
	}
	after := rec.snapshot()[before:]
	var failed []engine.SyncEvent
	for i, ev := range after {
		if ev.Err == nil {
			assert.GreaterOrEqual(t, ev.Batches, 1, "contract: an event without an Err covers at least one append (event %d after the failure: %+v)", i, ev)
			continue
		}
		failed = append(failed, ev)
	}
	if assert.Len(t, failed, 1, "contract: the round whose fsync failed is reported, once, with its error (events: %+v)", after) {
		assert.ErrorIs(t, failed[0].Err, errorfs.ErrInjected, "the event's Err is the round's failure")
	}

	// Failed, the engine makes no more rounds: nothing more is reported.
	n := len(rec.snapshot())
	assert.Error(t, e.Sync(ctx, e.EndOffset()), "the failure is sticky")
	assert.Error(t, e.Append(Batch(e.EndOffset(), 1, 100)), "the failure is sticky")
	assert.Len(t, rec.snapshot(), n, "contract: a failed engine reports no more rounds")
}
