package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// expired is a context that has already ended.
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestHighWatermarkWaitsForSync: under every policy the HW waits for the
// log's Sync, which under sync=always is an fsync and under the others the
// engine handing the batch to the OS: what a kill -9 would take back is
// never committed.
func TestHighWatermarkWaitsForSync(t *testing.T) {
	for _, policy := range []engine.SyncPolicy{engine.SyncAlways, engine.SyncInterval, engine.SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			m := open(t, flakyName, dir, engine.Options{Sync: policy})
			p := onePartition(t, m, "t")
			f := flakyOf(dir, p)
			gate := make(chan struct{})
			f.set(func(f *flakyEngine) { f.gate = gate })

			app, err := p.Append(batchtest.Plain(t, 3))
			require.NoError(t, err)
			assert.Equal(t, int64(3), p.EndOffset(), "the batch is ordered at once")
			assert.Equal(t, int64(0), p.HighWatermark(), "but not committed before the sync")
			r, err := p.Read(0, 1<<20)
			require.NoError(t, err)
			assert.Empty(t, r.Records, "consumers never see what a crash could take back")
			assert.ErrorIs(t, p.WaitHighWatermark(expired(), 3), context.Canceled)
			assert.ErrorIs(t, p.WaitDurable(expired(), 3), context.Canceled)

			close(gate)
			ctx := ctxT(t)
			require.NoError(t, p.WaitDurable(ctx, app.LastOffset+1))
			require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
			assert.Equal(t, int64(3), p.HighWatermark())
			assert.Len(t, readAll(t, p, 0), 3)
		})
	}
}

func TestSyncFailureFailsWaiters(t *testing.T) {
	dir := t.TempDir()
	m := open(t, flakyName, dir, engine.Options{Sync: engine.SyncAlways})
	p := onePartition(t, m, "t")
	f := flakyOf(dir, p)
	f.set(func(f *flakyEngine) { f.failSync = true })
	app, err := p.Append(batchtest.Plain(t, 1))
	require.NoError(t, err)
	ctx := ctxT(t)
	err = p.WaitHighWatermark(ctx, app.LastOffset+1)
	assert.ErrorIs(t, err, kerr.KafkaStorageError)
	assert.ErrorIs(t, err, errInjected)
	err = p.WaitDurable(ctx, app.LastOffset+1)
	assert.ErrorIs(t, err, kerr.KafkaStorageError)
	assert.Equal(t, int64(0), p.HighWatermark())
}

// TestLogFailureIsReported: a failed sync, an append and a log start move
// the engine refuses reach Config.OnLogFailure (the broker stops on it, as
// Kafka halts on its last failed log directory), with KAFKA_STORAGE_ERROR.
func TestLogFailureIsReported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(f *flakyEngine)
		// act runs after an append is durable (or failed).
		act func(t *testing.T, p *partition.Partition)
	}{
		{"sync", func(f *flakyEngine) { f.failSync = true }, nil},
		{"append", func(f *flakyEngine) { f.failAppend = true }, nil},
		{"delete before", func(f *flakyEngine) { f.failDelete = true }, func(t *testing.T, p *partition.Partition) {
			_, err := p.DeleteBefore(1)
			assert.ErrorIs(t, err, kerr.KafkaStorageError)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			reported := make(chan error, 16)
			m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: flakyName,
				EngineOptions: engine.Options{Sync: engine.SyncAlways},
				OnLogFailure:  func(err error) { reported <- err }})
			require.NoError(t, err)
			t.Cleanup(func() { m.Close() })
			p := onePartition(t, m, "t")
			if tc.act != nil {
				app, err := p.Append(batchtest.Plain(t, 1))
				require.NoError(t, err)
				require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
				flakyOf(dir, p).set(tc.inject)
				tc.act(t, p)
			} else {
				flakyOf(dir, p).set(tc.inject)
				if app, err := p.Append(batchtest.Plain(t, 1)); err == nil {
					assert.ErrorIs(t, p.WaitDurable(ctxT(t), app.LastOffset+1), kerr.KafkaStorageError)
				}
			}
			select {
			case err := <-reported:
				assert.ErrorIs(t, err, kerr.KafkaStorageError)
				assert.ErrorIs(t, err, errInjected)
			case <-ctxT(t).Done():
				t.Fatal("the failure was not reported")
			}
		})
	}
}

func TestLongPollWakesOnAppend(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	ctx := ctxT(t)
	woke := make(chan error, 1)
	go func() { woke <- p.WaitForData(ctx, 0) }()
	changed := p.Changed()
	select {
	case err := <-woke:
		t.Fatalf("WaitForData returned %v on an empty partition", err)
	default:
	}
	_, err := p.Append(batchtest.Plain(t, 1))
	require.NoError(t, err)
	require.NoError(t, <-woke)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Changed was not closed by the HW moving")
	}
	require.NoError(t, p.WaitForData(ctx, 0), "data is already there")

	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, p.WaitForData(short, 1), context.DeadlineExceeded)
}

func TestCloseWakesWaiters(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	ctx := ctxT(t)
	fetch, produce := make(chan error, 1), make(chan error, 1)
	go func() { fetch <- p.WaitForData(ctx, 0) }()
	go func() { produce <- p.WaitHighWatermark(ctx, 10) }()
	removeTopic(t, m, topicID("t"), 1)
	assert.ErrorIs(t, <-fetch, kerr.NotLeaderForPartition)
	assert.ErrorIs(t, <-produce, kerr.NotLeaderForPartition)
	assert.ErrorIs(t, p.WaitDurable(ctx, 1), kerr.NotLeaderForPartition)
	_, err := p.Read(0, 100)
	assert.Error(t, err)
}

// acks=1 under SyncAlways rides on the background loop's syncs: one stream of
// fsyncs for the partition, not a second one beside the loop's (which cost
// nearly two fsyncs per batch).
func TestAcksOneSharesTheLoopsSyncs(t *testing.T) {
	dir := t.TempDir()
	m := open(t, flakyName, dir, engine.Options{Sync: engine.SyncAlways})
	p := onePartition(t, m, "t")
	f := flakyOf(dir, p)
	var before int
	f.set(func(f *flakyEngine) { before = f.syncs })
	const n = 50
	for range n {
		app, err := p.Append(batchtest.Plain(t, 1))
		require.NoError(t, err)
		require.NoError(t, p.WaitDurable(ctxT(t), app.LastOffset+1))
	}
	var syncs int
	f.set(func(f *flakyEngine) { syncs = f.syncs - before })
	assert.LessOrEqual(t, syncs, n+1, "one sync per acknowledged batch at most, got %d for %d batches", syncs, n)
	assert.Equal(t, int64(n), p.HighWatermark())
}
