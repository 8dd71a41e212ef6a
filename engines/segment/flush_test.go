package segment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// within runs f and fails the test if it does not return in time: the
// operations it is used on must not wait for an fsync.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return (blocked behind an fsync?)", what)
	}
}

// gate holds the engine's I/O at one point until opened. A test that fails
// before opening it opens it at cleanup, before the engine is closed.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) wait() { <-g.ch }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func isLogSync(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileSyncData && strings.HasSuffix(op.Path, logSuffix)
}

// TestSyncCoversRolls: when Sync returns, every batch below its end
// survives a power loss, including batches in segments rolled since the last
// sync and the sealed segments before them.
func TestSyncCoversRolls(t *testing.T) {
	for _, writers := range []int{1, 8} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			fs := newMem(t)
			e := open(t, fs, engine.Options{SegmentBytes: 1 << 10})
			var (
				assign sync.Mutex
				wg     sync.WaitGroup
				all    []engine.Batch
			)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 40 {
						assign.Lock()
						b := enginetest.Batch(e.EndOffset(), int32(1+i%3), 100+(w*53+i*31)%900)
						err := e.Append(b)
						all = append(all, b)
						assign.Unlock()
						if !assert.NoError(t, err) {
							return
						}
						assert.NoError(t, e.Sync(context.Background(), b.NextOffset()))
					}
				}()
			}
			wg.Wait()
			require.Greater(t, len(files(t, fs, logSuffix)), 10, "the log rolled many times")
			slices.SortFunc(all, func(a, b engine.Batch) int { return int(a.BaseOffset - b.BaseOffset) })
			after := open(t, crash(fs, 0), engine.Options{SegmentBytes: 1 << 10})
			requireBatches(t, all, enginetest.ReadAll(t, after, 64<<10), "after a power loss")
		})
	}
}

// TestGroupCommit: appends go on while an fsync runs; the Syncs that queue
// meanwhile wait for the next fsync, and that one fsync completes all of
// them.
func TestGroupCommit(t *testing.T) {
	var (
		armed   atomic.Bool
		syncs   atomic.Int64
		started = make(chan struct{})
		release = newGate()
	)
	fs := errorfs.Wrap(newMem(t), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && isLogSync(op) && syncs.Add(1) == 1 {
			close(started)
			release.wait()
		}
		return nil
	}))
	e := open(t, fs, engine.Options{})
	t.Cleanup(release.open) // before Close, which waits for the flusher
	armed.Store(true)
	first := appendN(t, e, 1, 1, fixed(100))
	firstDone := make(chan error, 1)
	go func() { firstDone <- e.Sync(context.Background(), first[0].NextOffset()) }()
	<-started // the flusher is inside the first fsync, and stays there

	const waiters = 16
	var later []engine.Batch
	within(t, "Append during an fsync", func() { later = appendN(t, e, waiters, 2, fixed(300)) })
	errs := make(chan error, waiters)
	for _, b := range later {
		go func() { errs <- e.Sync(context.Background(), b.NextOffset()) }()
	}
	require.Eventually(t, func() bool {
		e.sm.mu.Lock()
		defer e.sm.mu.Unlock()
		return e.sm.next != nil && e.sm.next.waiters == waiters
	}, 20*time.Second, time.Millisecond, "every Sync to queue for the next round")
	select {
	case err := <-firstDone:
		t.Fatalf("the first Sync returned (%v) before its fsync finished", err)
	default:
	}
	release.open()
	require.NoError(t, <-firstDone)
	for range waiters {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int64(2), syncs.Load(), "one fsync for the first waiter, one for all that queued behind it")
}

// TestSyncHonoursContextDuringFsync: a waiter whose context ends while the
// fsync it waits for runs returns the context's error at once.
func TestSyncHonoursContextDuringFsync(t *testing.T) {
	var (
		armed   atomic.Bool
		started = make(chan struct{})
		release = newGate()
		once    sync.Once
	)
	fs := errorfs.Wrap(newMem(t), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && isLogSync(op) {
			once.Do(func() { close(started); release.wait() })
		}
		return nil
	}))
	e := open(t, fs, engine.Options{})
	t.Cleanup(release.open) // before Close, which waits for the flusher
	armed.Store(true)
	appendN(t, e, 1, 1, fixed(10))
	go func() { _ = e.Sync(context.Background(), e.EndOffset()) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	within(t, "Sync with an ending context", func() {
		assert.ErrorIs(t, e.Sync(ctx, e.EndOffset()), context.DeadlineExceeded)
	})
	release.open()
}

// TestIOErrorsAreSticky: the first failed write or fsync fails every later
// change, even when the disk recovers; reads of what was written go on.
func TestIOErrorsAreSticky(t *testing.T) {
	for _, c := range []struct {
		name string
		op   errorfs.OpKind
		call func(e *Engine) error // the call that meets the error
	}{
		{"fsync", errorfs.OpFileSyncData, func(e *Engine) error {
			if err := e.Append(enginetest.Batch(e.EndOffset(), 1, 50)); err != nil {
				return err
			}
			return e.Sync(context.Background(), e.EndOffset())
		}},
		{"write", errorfs.OpFileWriteAt, func(e *Engine) error {
			if err := e.Append(enginetest.Batch(e.EndOffset(), 1, 50)); err != nil {
				return err
			}
			return e.Sync(context.Background(), e.EndOffset()) // the flusher writes, then syncs
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var failing atomic.Bool
			fs := errorfs.Wrap(newMem(t), errorfs.InjectorFunc(func(op errorfs.Op) error {
				if failing.Load() && op.Kind == c.op && strings.HasSuffix(op.Path, logSuffix) {
					return errorfs.ErrInjected
				}
				return nil
			}))
			e := open(t, fs, engine.Options{})
			bs := appendN(t, e, 3, 2, fixed(40))
			failing.Store(true)
			require.ErrorIs(t, c.call(e), errorfs.ErrInjected)
			failing.Store(false)
			end := e.EndOffset()
			assert.ErrorIs(t, e.Append(enginetest.Batch(end, 1, 50)), errorfs.ErrInjected, "Append after the error")
			assert.ErrorIs(t, e.Sync(context.Background(), end), errorfs.ErrInjected, "Sync after the error")
			assert.ErrorIs(t, e.Truncate(2), errorfs.ErrInjected, "Truncate after the error")
			assert.ErrorIs(t, e.DeleteBefore(2), errorfs.ErrInjected, "DeleteBefore after the error")
			assert.Equal(t, end, e.EndOffset(), "nothing was appended after the error")
			got, err := e.Read(0, 1<<20)
			require.NoError(t, err, "reads go on")
			requireBatches(t, bs, got[:3], "reads after the error")
			assert.ErrorIs(t, e.Close(), errorfs.ErrInjected, "Close reports the error")
		})
	}
}

// TestSyncInterval: Sync returns at once; the flusher syncs when the
// injected clock says an interval has passed.
func TestSyncInterval(t *testing.T) {
	mem := newMem(t)
	var syncs atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if isLogSync(op) {
			syncs.Add(1)
		}
		return nil
	}))
	clk := clock.NewManual(time.Unix(1, 0))
	e := open(t, fs, engine.Options{Sync: engine.SyncInterval, SyncInterval: time.Second, Clock: clk})
	syncs.Store(0)
	bs := appendN(t, e, 5, 3, fixed(100))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()), "Sync returns at once")
	assert.Zero(t, syncs.Load(), "no fsync before the interval")
	assert.Empty(t, enginetest.ReadAll(t, open(t, crash(mem, 0), engine.Options{}), 64<<10), "nothing is durable yet")

	clk.Advance(time.Second)
	require.Eventually(t, func() bool {
		e.sm.mu.Lock()
		defer e.sm.mu.Unlock()
		return e.sm.synced == bs[4].NextOffset()
	}, 20*time.Second, time.Millisecond, "the interval's flush")
	requireBatches(t, bs, enginetest.ReadAll(t, open(t, crash(mem, 0), engine.Options{}), 64<<10), "durable after the interval")
}

// TestSyncNever: no fsync until Close, which syncs everything.
func TestSyncNever(t *testing.T) {
	mem := newMem(t)
	var syncs atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if isLogSync(op) {
			syncs.Add(1)
		}
		return nil
	}))
	e := open(t, fs, engine.Options{Sync: engine.SyncNever})
	syncs.Store(0)
	bs := appendN(t, e, 5, 3, fixed(100))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	assert.Zero(t, syncs.Load(), "Sync does not fsync under SyncNever")
	require.NoError(t, e.Close())
	assert.NotZero(t, syncs.Load(), "Close syncs")
	requireBatches(t, bs, enginetest.ReadAll(t, open(t, crash(mem, 0), engine.Options{}), 64<<10), "durable after Close")
}

// TestUnwrittenTailIsBounded: appenders faster than the flusher write the
// tail themselves rather than let it grow without bound.
func TestUnwrittenTailIsBounded(t *testing.T) {
	// The OS filesystem: MemFS grows a file a byte at a time on WriteAt.
	e, err := Open(filepath.Join(t.TempDir(), "log"), engine.Options{Sync: engine.SyncNever})
	require.NoError(t, err)
	defer e.Close()
	e.flushMu.Lock() // the flusher cannot run a round
	const size = 200 << 10
	data := make([]byte, size) // not enginetest's payload: making 10 MB of it is slow under -race
	for i := range 50 {
		require.NoError(t, e.Append(engine.Batch{BaseOffset: int64(i), Records: 1, Data: data}))
		assert.LessOrEqual(t, e.active.unwritten(), pendBytesMax, "unwritten tail")
	}
	assert.Greater(t, e.active.written.Load(), int64(40*size), "the appenders wrote most of it")
	e.flushMu.Unlock()
	got, err := e.Read(49, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, data, got[0].Data)
}

// TestReadsDuringWrite: while the flusher's write is in progress, a read
// spans bytes in the file, in the tail being written and in the tail still
// pending, and sees every batch whole.
func TestReadsDuringWrite(t *testing.T) {
	var (
		armed   atomic.Bool
		started = make(chan struct{})
		release = newGate()
		once    sync.Once
	)
	fs := errorfs.Wrap(newMem(t), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind == errorfs.OpFileWriteAt && strings.HasSuffix(op.Path, logSuffix) {
			once.Do(func() { close(started); release.wait() })
		}
		return nil
	}))
	e := open(t, fs, engine.Options{})
	t.Cleanup(release.open) // before Close, which waits for the flusher
	inFile := appendN(t, e, 3, 2, fixed(500))
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	armed.Store(true)
	inFlight := appendN(t, e, 3, 2, fixed(700))
	synced := make(chan error, 1)
	go func() { synced <- e.Sync(context.Background(), e.EndOffset()) }()
	<-started // the flusher is writing inFlight
	pending := appendN(t, e, 3, 2, fixed(900))
	all := slices.Concat(inFile, inFlight, pending)
	requireBatches(t, all, enginetest.ReadAll(t, e, 64<<10), "reads during the write")
	for _, b := range all {
		got, err := e.Read(b.BaseOffset, 0)
		require.NoError(t, err)
		requireBatches(t, []engine.Batch{b}, got, fmt.Sprintf("Read(%d, 0)", b.BaseOffset))
	}
	release.open()
	require.NoError(t, <-synced)
	requireBatches(t, all, enginetest.ReadAll(t, e, 64<<10), "reads after the write")
}
