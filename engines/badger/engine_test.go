package badger

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/kvlog"
)

func openTest(t *testing.T, dir string, opts engine.Options) *Engine {
	t.Helper()
	e, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func appendSome(t *testing.T, e *Engine, n int, records int32, size int) []engine.Batch {
	t.Helper()
	var out []engine.Batch
	for range n {
		b := enginetest.Batch(e.EndOffset(), records, size)
		require.NoError(t, e.Append(b))
		out = append(out, b)
	}
	return out
}

func (e *Engine) committedEnd() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.committed
}

// TestPoliciesCommit checks what makes the flusher commit pending batches
// under each policy: every Append (always), the clock (interval), or the
// pending list growing past pendingFlushBytes and Close (never); and that
// a Sync waits for a commit under every policy, since Badger has no
// unsynced state a process crash would spare.
func TestPoliciesCommit(t *testing.T) {
	const interval = 50 * time.Millisecond
	for _, c := range []struct {
		policy               engine.SyncPolicy
		byAppend, byInterval bool
	}{
		{engine.SyncAlways, true, true},
		{engine.SyncInterval, false, true},
		{engine.SyncNever, false, false},
	} {
		t.Run(c.policy.String(), func(t *testing.T) {
			clk := clock.NewManual(time.Unix(0, 0))
			e := openTest(t, t.TempDir(), engine.Options{Sync: c.policy, SyncInterval: interval, Clock: clk})
			appendSome(t, e, 3, 2, 100)
			if c.byAppend {
				require.Eventually(t, func() bool { return e.committedEnd() == 6 }, 5*time.Second, time.Millisecond,
					"under %s Append commits", c.policy)
			} else {
				assert.Equal(t, int64(0), e.committedEnd(), "under %s Append alone does not commit", c.policy)
			}
			clk.Advance(interval)
			if c.byInterval {
				require.Eventually(t, func() bool { return e.committedEnd() == 6 }, 5*time.Second, time.Millisecond,
					"under %s the clock commits what is pending", c.policy)
			} else {
				assert.Equal(t, int64(0), e.committedEnd(), "under %s the clock does not commit", c.policy)
				appendSome(t, e, 5, 1, pendingFlushBytes/4)
				require.Eventually(t, func() bool { return e.committedEnd() > 6 }, 5*time.Second, time.Millisecond,
					"under %s a pending list past %d bytes is committed", c.policy, pendingFlushBytes)
			}
			appendSome(t, e, 2, 1, 100)
			require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
			assert.Equal(t, e.EndOffset(), e.committedEnd(), "under %s Sync waits for the commit", c.policy)
			appendSome(t, e, 2, 1, 100)
			want := enginetest.ReadAll(t, e, 1<<20)
			require.NoError(t, e.Close())
			r := openTest(t, e.dbDir(), engine.Options{})
			assert.Equal(t, want, enginetest.ReadAll(t, r, 1<<20), "Close commits what is pending")
		})
	}
}

func (e *Engine) dbDir() string { return filepath.Dir(e.db.bdb.Opts().Dir) }

// TestLoggedFailureIsSticky checks that a failure Badger only logs (a failed
// value log fsync inside a commit) fails the Sync that waits for that commit
// and every write after it.
func TestLoggedFailureIsSticky(t *testing.T) {
	e := openTest(t, t.TempDir(), engine.Options{})
	appendSome(t, e, 2, 1, 500)
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	e.db.log.Errorf("Error while curlf sync: %v\n", errors.New("input/output error"))
	require.NoError(t, e.Append(enginetest.Batch(2, 1, 500)), "Append does not wait for the disk")
	err := e.Sync(context.Background(), e.EndOffset())
	assert.ErrorContains(t, err, "curlf sync", "the Sync waiting on a commit whose fsync failed fails")
	assert.Error(t, e.Append(enginetest.Batch(3, 1, 500)), "appends are refused after it")
	assert.Error(t, e.Truncate(1))
	assert.Error(t, e.DeleteBefore(1))
	got, err := e.Read(0, 1<<20)
	require.NoError(t, err, "reads still work")
	assert.Len(t, got, 3)
}

func TestStoreLogMarksCorruption(t *testing.T) {
	l := &storeLog{log: discard()}
	l.Errorf("CHECKSUM_MISMATCH: table 7")
	l.Errorf("Ignoring table %s", "000007.sst")
	assert.ErrorIs(t, l.err(), engine.ErrCorrupt, "a table Badger skips for a bad checksum is ErrCorrupt")
}

func TestRefusesCustomFS(t *testing.T) {
	_, err := Open(t.TempDir(), engine.Options{FS: vfs.NewMem()})
	assert.ErrorIs(t, err, engine.ErrUnsupported)
}

// TestOpenAfterKillInOpen reproduces what a process killed inside Badger's
// Open leaves: an empty memtable WAL and an empty value log file.
func TestOpenAfterKillInOpen(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, engine.Options{})
	want := appendSome(t, e, 5, 2, 300)
	require.NoError(t, e.Close())
	for _, name := range []string{"00001.mem", "000099.vlog"} {
		f, err := os.Create(filepath.Join(dir, "db", name))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	r := openTest(t, dir, engine.Options{})
	assert.Equal(t, want, enginetest.ReadAll(t, r, 1<<20), "empty log files left by a kill do not stop Open")
}

// TestOpenFinishesTruncate leaves a Truncate half done, as a crash between
// its transactions would, and checks that Open finishes it.
func TestOpenFinishesTruncate(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, engine.Options{})
	bs := appendSome(t, e, 10, 3, 200) // 0..29
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	// The first transaction of Truncate(12): the cut, and the newest batch.
	require.NoError(t, e.db.bdb.Update(func(txn *badgerdb.Txn) error {
		if err := txn.Set(kvlog.Space{}.MetaKey('t'), kvlog.EncodeOffset(12)); err != nil {
			return err
		}
		return txn.Delete(kvlog.Space{}.BatchKey(27))
	}))
	require.NoError(t, e.Close())

	r := openTest(t, dir, engine.Options{})
	assert.Equal(t, int64(12), r.EndOffset(), "Open finishes an interrupted Truncate")
	assert.Equal(t, bs[:4], enginetest.ReadAll(t, r, 1<<20))
	_, ok, err := r.getOffset(r.cutKey())
	require.NoError(t, err)
	assert.False(t, ok, "the cut key is gone once the Truncate is done")
	require.NoError(t, r.Append(enginetest.Batch(12, 1, 10)), "appends resume at the cut")
}

// TestOpenFinishesDeleteBefore leaves a DeleteBefore with the new start
// written but no batch deleted, and checks that Open drops the batches below
// it and keeps the one holding it.
func TestOpenFinishesDeleteBefore(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, engine.Options{})
	bs := appendSome(t, e, 10, 3, 200) // 0..29
	require.NoError(t, e.Sync(context.Background(), e.EndOffset()))
	require.NoError(t, e.db.bdb.Update(func(txn *badgerdb.Txn) error { return txn.Set(kvlog.Space{}.StartKey(), kvlog.EncodeOffset(13)) }))
	require.NoError(t, e.Close())

	r := openTest(t, dir, engine.Options{})
	assert.Equal(t, int64(13), r.StartOffset())
	assert.Equal(t, bs[4:], enginetest.ReadAll(t, r, 1<<20), "the batch holding the start stays, those below it go")
	keys, err := r.batchKeys(0, 12)
	require.NoError(t, err)
	assert.Empty(t, keys, "batches wholly below the start are deleted from the store")
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
