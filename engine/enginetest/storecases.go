package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

func testStoreReopen(t *testing.T, d engine.Driver, dir string) {
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{})
	ids, err := s.Logs()
	require.NoError(t, err)
	assert.Empty(t, ids, "contract: a new store holds no log")
	want := map[engine.LogID][]engine.Batch{}
	var made []engine.LogID
	for n := range 3 {
		id, e := create(t, s)
		assert.NotContains(t, made, id, "contract: Create hands out a new id each time")
		made = append(made, id)
		want[id] = appendLog(t, e, n, 10+n)
		syncAll(t, e)
		require.NoError(t, e.Close())
	}
	slices.Sort(made)
	ids, err = s.Logs()
	require.NoError(t, err)
	assert.Equal(t, made, ids, "contract: Logs lists every log Create made, in id order")
	_, err = s.Open(made[2]+1000, engine.LogOptions{})
	assert.ErrorIs(t, err, engine.ErrNoLog, "contract: Open of an id Create never handed out")
	if !d.Caps.Durable {
		return
	}
	require.NoError(t, s.Close())
	s = h.openStore(engine.Options{})
	ids, err = s.Logs()
	require.NoError(t, err)
	assert.Equal(t, made, ids, "contract: a reopened store lists the same logs")
	for _, id := range made {
		e := open(t, s, id)
		sameBatches(t, want[id], ReadAll(t, e, 1<<20), fmt.Sprintf("contract: log %s keeps its batches across a store reopen", id))
		require.NoError(t, e.Close())
	}
}

func testStoreIDs(t *testing.T, d engine.Driver, dir string) {
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{})
	seen := map[engine.LogID]bool{}
	fresh := func(s engine.Store, what string) engine.LogID {
		id, e := create(t, s)
		assert.False(t, seen[id], "contract: Create never hands out an id twice, not even a deleted log's (%s: %s again)", what, id)
		seen[id] = true
		appendLog(t, e, 1, 3)
		require.NoError(t, e.Close())
		return id
	}
	a := fresh(s, "first")
	fresh(s, "second")
	require.NoError(t, s.Delete(a), "contract: Delete of a closed log")
	_, err := s.Open(a, engine.LogOptions{})
	assert.ErrorIs(t, err, engine.ErrNoLog, "contract: a deleted log no longer opens")
	assert.ErrorIs(t, s.Delete(a), engine.ErrNoLog, "contract: a deleted log cannot be deleted again")
	ids, err := s.Logs()
	require.NoError(t, err)
	assert.NotContains(t, ids, a, "contract: Logs does not list a deleted log")
	c := fresh(s, "after a deletion")
	require.NoError(t, s.Delete(c))
	if !d.Caps.Durable {
		return
	}
	require.NoError(t, s.Close())
	s = h.openStore(engine.Options{})
	fresh(s, "after a reopen")
	ids, err = s.Logs()
	require.NoError(t, err)
	assert.NotContains(t, ids, c, "contract: a log deleted before the store closed stays deleted")
}

// testStoreIsolation appends to several logs side by side, truncates and
// trims some, and checks that each reads exactly its own batches.
func testStoreIsolation(t *testing.T, d engine.Driver, dir string) {
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{SegmentBytes: 8 << 10})
	const logs = 4
	ids := make([]engine.LogID, logs)
	es := make([]engine.LogEngine, logs)
	want := make([][]engine.Batch, logs)
	for n := range logs {
		ids[n], es[n] = create(t, s)
	}
	var wg sync.WaitGroup
	for n := range logs {
		wg.Go(func() {
			for i := range 60 {
				b := logBatch(n, es[n].EndOffset(), int32(1+i%3), i)
				if !assert.NoError(t, es[n].Append(b)) {
					return
				}
				want[n] = append(want[n], b)
				if i%7 == 0 && !assert.NoError(t, es[n].Sync(context.Background(), b.NextOffset())) {
					return
				}
			}
		})
	}
	wg.Wait()
	// Log 1 loses its second half, log 2 its first, log 3 everything.
	mid := want[1][30].BaseOffset
	require.NoError(t, es[1].Truncate(mid))
	want[1] = want[1][:30]
	require.NoError(t, es[2].DeleteBefore(want[2][30].BaseOffset))
	want[2] = want[2][30:]
	require.NoError(t, es[3].Truncate(0))
	want[3] = nil
	check := func(what string) {
		for n := range logs {
			sameBatches(t, want[n], ReadAll(t, es[n], 1<<20), fmt.Sprintf("contract: log %d of %d reads only its own batches %s", n, logs, what))
		}
		assert.Equal(t, int64(0), es[3].EndOffset(), "contract: a truncation of one log leaves it empty, whatever the others hold")
	}
	check("after truncations and trims of others")
	for n := range logs {
		syncAll(t, es[n])
		require.NoError(t, es[n].Close())
	}
	if !d.Caps.Durable {
		return
	}
	s, es = h.reopen(s, engine.Options{SegmentBytes: 8 << 10}, ids)
	check("after the store reopened")
	for n := range logs {
		require.NoError(t, es[n].Close())
	}
}

// testStoreDeleteUnderLoad deletes logs, and creates and deletes another,
// while two logs take appends, syncs and reads; theirs must all be there.
func testStoreDeleteUnderLoad(t *testing.T, d engine.Driver, dir string) {
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{SegmentBytes: 8 << 10})
	var doomed []engine.LogID
	for n := range 2 {
		id, e := create(t, s)
		appendLog(t, e, 4+n, 200)
		syncAll(t, e)
		require.NoError(t, e.Close())
		doomed = append(doomed, id)
	}
	ids := make([]engine.LogID, 2)
	es := make([]engine.LogEngine, 2)
	want := make([][]engine.Batch, 2)
	for n := range es {
		ids[n], es[n] = create(t, s)
	}
	var (
		wg      sync.WaitGroup
		loading = make(chan struct{})
	)
	for n := range es {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(n), 3))
			for i := range 300 {
				if i == 50 && n == 0 {
					close(loading)
				}
				b := logBatch(n, es[n].EndOffset(), int32(1+i%3), i)
				if !assert.NoError(t, es[n].Append(b), "contract: appends to other logs go on during a Delete") {
					return
				}
				want[n] = append(want[n], b)
				if !assert.NoError(t, es[n].Sync(context.Background(), b.NextOffset()), "contract: syncs of other logs go on during a Delete") {
					return
				}
				// An engine that lost this log's batches has no offset to
				// read; the check after the loop reports the loss.
				if end := es[n].EndOffset(); end > 0 {
					if _, err := es[n].Read(rng.Int64N(end), 2000); !assert.NoError(t, err, "contract: reads of other logs go on during a Delete") {
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		<-loading
		for _, id := range doomed {
			assert.NoError(t, s.Delete(id), "contract: Delete of a closed log while others are busy")
		}
		id, e := create(t, s)
		appendLog(t, e, 6, 20)
		assert.NoError(t, e.Close())
		assert.NoError(t, s.Delete(id))
		doomed = append(doomed, id)
	})
	wg.Wait()
	check := func(what string) {
		for n := range es {
			sameBatches(t, want[n], ReadAll(t, es[n], 1<<20), fmt.Sprintf("contract: log %d keeps every batch through Deletes of others %s", n, what))
		}
		got, err := s.Logs()
		require.NoError(t, err)
		assert.Equal(t, ids, got, "contract: Logs lists the logs left, none deleted %s", what)
	}
	check("")
	for n := range es {
		require.NoError(t, es[n].Close())
	}
	if !d.Caps.Durable {
		return
	}
	s, es = h.reopen(s, engine.Options{SegmentBytes: 8 << 10}, ids)
	check("after a reopen")
	for _, id := range doomed {
		_, err := s.Open(id, engine.LogOptions{})
		assert.ErrorIs(t, err, engine.ErrNoLog, "contract: a deleted log stays deleted after a reopen")
	}
	for n := range es {
		require.NoError(t, es[n].Close())
	}
}

func testStoreInUse(t *testing.T, d engine.Driver, dir string) {
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{})
	id, e := create(t, s)
	_, err := s.Open(id, engine.LogOptions{})
	assert.ErrorIs(t, err, engine.ErrLogInUse, "contract: Open of a log that is open")
	assert.ErrorIs(t, s.Delete(id), engine.ErrLogInUse, "contract: Delete of a log that is open")
	appendLog(t, e, 0, 2)
	require.NoError(t, e.Close())
	e = open(t, s, id)
	require.NoError(t, s.Close(), "contract: Close of a store with a log still open")
	assert.ErrorIs(t, e.Append(Batch(e.EndOffset(), 1, 20)), engine.ErrClosed, "contract: the store's Close closes the logs left open")
	_, _, err = s.Create(engine.LogOptions{})
	assert.ErrorIs(t, err, engine.ErrClosed, "contract: Create after Close")
	_, err = s.Open(id, engine.LogOptions{})
	assert.ErrorIs(t, err, engine.ErrClosed, "contract: Open after Close")
	assert.ErrorIs(t, s.Delete(id), engine.ErrClosed, "contract: Delete after Close")
	_, err = s.Logs()
	assert.ErrorIs(t, err, engine.ErrClosed, "contract: Logs after Close")
	assert.ErrorIs(t, s.Close(), engine.ErrClosed, "contract: a second Close")
}

// testStoreSharedCommit: with SharedCommit, one log's Sync is a round that
// covers the appends to the others (the Observer counts them).
func testStoreSharedCommit(t *testing.T, d engine.Driver, dir string) {
	if !d.Caps.SharedCommit {
		t.Skipf("engine %s does not declare SharedCommit: each log syncs on its own", d.Name)
	}
	h := newStoreHarness(t, d, dir)
	rec := &syncRecorder{}
	s := h.openStore(engine.Options{Sync: engine.SyncAlways, Observer: rec})
	_, a := create(t, s)
	_, b := create(t, s)
	appends, bytes := 0, int64(0)
	for i := range 10 {
		for n, e := range []engine.LogEngine{a, b} {
			x := logBatch(n, e.EndOffset(), 1, i)
			require.NoError(t, e.Append(x))
			appends, bytes = appends+1, bytes+int64(len(x.Data))
		}
		require.NoError(t, b.Sync(context.Background(), b.EndOffset()))
		got, _ := rec.counted()
		assert.Equal(t, appends, got, "contract: with SharedCommit, once one log's Sync returns, the events have counted the appends to every log before it (round %d)", i)
	}
	before := len(rec.snapshot())
	require.NoError(t, a.Sync(context.Background(), a.EndOffset()))
	assert.Len(t, rec.snapshot(), before, "contract: with SharedCommit, a Sync of a log another log's Sync covered needs no round of its own")
	rec.checkEvents(t, appends, bytes, "two logs, one syncing")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}

func testStoreManyLogs(t *testing.T, d engine.Driver, dir string) {
	const logs = 150
	h := newStoreHarness(t, d, dir)
	s := h.openStore(engine.Options{})
	ids := make([]engine.LogID, logs)
	want := make([][]engine.Batch, logs)
	for n := range logs {
		var e engine.LogEngine
		ids[n], e = create(t, s)
		want[n] = appendLog(t, e, n%16, 1+n%3)
		require.NoError(t, e.Close())
	}
	check := func(s engine.Store, what string) {
		got, err := s.Logs()
		require.NoError(t, err)
		assert.Equal(t, ids, got, "contract: Logs lists every one of %d logs %s", logs, what)
		for n, id := range ids {
			e, err := s.Open(id, engine.LogOptions{})
			if !assert.NoError(t, err, "contract: each of %d logs opens %s", logs, what) {
				continue
			}
			if n%10 == 0 && d.Caps.Durable {
				sameBatches(t, want[n], ReadAll(t, e, 1<<20), fmt.Sprintf("contract: log %d of %d reads its batches %s", n, logs, what))
			}
			require.NoError(t, e.Close())
		}
	}
	check(s, "")
	if !d.Caps.Durable {
		return
	}
	require.NoError(t, s.Close())
	check(h.openStore(engine.Options{}), "after a reopen")
}

func testStoreWrongEngine(t *testing.T, d engine.Driver, dir string) {
	if !d.Caps.Durable {
		t.Skipf("engine %s does not declare Durable: it keeps nothing in a directory", d.Name)
	}
	fs := vfs.Default
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	require.NoError(t, engine.WriteFileAtomic(fs, fs.PathJoin(dir, engine.MarkerFile), []byte("some-other-engine\n")))
	_, err := d.OpenStoreIn(dir, engine.Options{})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "contract: a store directory another engine wrote is refused")

	stray := filepath.Join(filepath.Dir(dir), "stray")
	require.NoError(t, fs.MkdirAll(stray, 0o755))
	f, err := fs.Create(fs.PathJoin(stray, "notes.txt"), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = d.OpenStoreIn(stray, engine.Options{})
	assert.ErrorIs(t, err, engine.ErrWrongEngine, "contract: a non-empty directory with no engine marker is refused as a store")
}
