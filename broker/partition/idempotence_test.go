package partition_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// produce is one Append of an idempotent batch and what it must return.
type produce struct {
	epoch int16
	seq   int32
	n     int
	want  *kerr.Error // nil: accepted
	dup   bool
	base  int64 // expected base offset (the original one for a duplicate)
}

func TestIdempotentAppend(t *testing.T) {
	const pid = 9
	cases := []struct {
		name  string
		steps []produce
	}{
		{"retry gets the original offset and is not stored twice", []produce{
			{seq: 0, n: 3, base: 0}, {seq: 3, n: 2, base: 3}, {seq: 3, n: 2, dup: true, base: 3}, {seq: 0, n: 3, dup: true, base: 0}, {seq: 5, n: 1, base: 5},
		}},
		{"gap", []produce{{seq: 0, n: 3, base: 0}, {seq: 4, n: 1, want: kerr.OutOfOrderSequenceNumber}, {seq: 3, n: 1, base: 3}}},
		{"old epoch", []produce{{epoch: 1, seq: 0, n: 1, base: 0}, {epoch: 0, seq: 1, n: 1, want: kerr.InvalidProducerEpoch}}},
		{"new epoch restarts at zero", []produce{
			{seq: 0, n: 2, base: 0}, {epoch: 1, seq: 2, n: 1, want: kerr.OutOfOrderSequenceNumber}, {epoch: 1, seq: 0, n: 1, base: 2},
		}},
		{"five-batch window", []produce{
			{seq: 0, n: 1, base: 0}, {seq: 1, n: 1, base: 1}, {seq: 2, n: 1, base: 2}, {seq: 3, n: 1, base: 3}, {seq: 4, n: 1, base: 4},
			{seq: 5, n: 1, base: 5},
			{seq: 1, n: 1, dup: true, base: 1},
			{seq: 0, n: 1, want: kerr.OutOfOrderSequenceNumber},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := open(t, memory.Name, t.TempDir(), engine.Options{})
			p := onePartition(t, m, "t")
			runProduces(t, p, pid, c.steps)
		})
	}
}

// runProduces appends each step's batch and checks the outcome, and that a
// duplicate or refused batch stored nothing.
func runProduces(t *testing.T, p *partition.Partition, pid int64, steps []produce) {
	t.Helper()
	for i, s := range steps {
		end := p.EndOffset()
		app, err := p.Append(batchtest.Idempotent(t, pid, s.epoch, s.seq, s.n))
		if s.want != nil {
			require.ErrorIs(t, err, s.want, "step %d", i)
			require.Equal(t, end, p.EndOffset(), "step %d: a refused batch stores nothing", i)
			continue
		}
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.dup, app.Duplicate, "step %d duplicate", i)
		assert.Equal(t, s.base, app.BaseOffset, "step %d base offset", i)
		assert.Equal(t, s.base+int64(s.n)-1, app.LastOffset, "step %d last offset", i)
		if s.dup {
			require.Equal(t, end, p.EndOffset(), "step %d: a duplicate stores nothing", i)
		}
	}
}

func TestFailedAppendIsNotRemembered(t *testing.T) {
	dir := t.TempDir()
	m := open(t, flakyName, dir, engine.Options{Sync: engine.SyncNever})
	p := onePartition(t, m, "t")
	f := flakyOf(dir, p)

	_, err := p.Append(batchtest.Idempotent(t, 1, 0, 0, 2))
	require.NoError(t, err)
	f.set(func(f *flakyEngine) { f.failAppend = true })
	_, err = p.Append(batchtest.Idempotent(t, 1, 0, 2, 2))
	require.ErrorIs(t, err, kerr.KafkaStorageError)
	require.ErrorIs(t, err, errInjected, "the engine's error stays in the chain")
	f.set(func(f *flakyEngine) { f.failAppend = false })

	app, err := p.Append(batchtest.Idempotent(t, 1, 0, 2, 2))
	require.NoError(t, err, "the retry of a failed batch is new, not a duplicate or a gap")
	assert.False(t, app.Duplicate)
	assert.Equal(t, int64(2), app.BaseOffset)
	assert.Equal(t, int64(4), p.EndOffset())
}

func TestRetryBufferIsPatchedInPlace(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	_, err := p.Append(batchtest.Plain(t, 4))
	require.NoError(t, err)
	b := batchtest.Idempotent(t, 2, 0, 0, 1)
	orig := bytes.Clone(b)
	app, err := p.Append(b)
	require.NoError(t, err)
	assert.Equal(t, int64(4), app.BaseOffset)
	assert.Equal(t, orig[12:], b[12:], "only the base offset changed")
	app, err = p.Append(b)
	require.NoError(t, err, "the same (patched) buffer retried")
	assert.True(t, app.Duplicate)
	assert.Equal(t, int64(4), app.BaseOffset)
}
