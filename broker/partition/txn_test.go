package partition_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
	"github.com/minikafka/minikafka/engines/segment"
)

// txnBatch is n records of producer pid's transaction at epoch, from seq.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, prefix string) []byte {
	return batchtest.Make(t, batchtest.Spec{Values: batchtest.Values(prefix, n), Idempotent: true,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, ExtraAttributes: 0x10})
}

// appendTxn appends a transactional batch, verifying it when asked to as
// a coordinator that knows the partition is in the transaction would.
func appendTxn(t *testing.T, p *partition.Partition, b []byte) partition.Appended {
	t.Helper()
	a, err := p.Append(b)
	var v *partition.VerifyNeeded
	if errors.As(err, &v) {
		a, err = p.AppendVerified(b, v.Guard)
	}
	require.NoError(t, err)
	return a
}

func TestTxnNeedsVerification(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	b := txnBatch(t, 7, 0, 0, 2, "a")
	_, err := p.Append(b)
	var v *partition.VerifyNeeded
	require.ErrorAs(t, err, &v)
	assert.Equal(t, int64(7), v.ProducerID)
	assert.Equal(t, int64(0), p.EndOffset(), "nothing appended before the verification")

	// A marker in between voids the guard: the write raced its
	// transaction's end.
	_, err = p.AppendMarker(batch.Producer{ID: 7, Epoch: 0}, batch.Marker{Commit: false})
	require.NoError(t, err)
	_, err = p.AppendVerified(b, v.Guard)
	assert.ErrorIs(t, err, kerr.InvalidTxnState)

	a := appendTxn(t, p, b)
	assert.Equal(t, int64(1), a.BaseOffset)
	// The rest of the transaction needs no verification.
	_, err = p.Append(txnBatch(t, 7, 0, 2, 1, "b"))
	require.NoError(t, err)
	// Nor may the producer write outside it.
	_, err = p.Append(batchtest.Idempotent(t, 7, 0, 3, 1))
	assert.ErrorIs(t, err, kerr.InvalidTxnState)
}

func TestTxnLastStableOffsetAndAborted(t *testing.T) {
	for _, eng := range []string{memory.Name, segment.Name} {
		t.Run(eng, func(t *testing.T) {
			dir := t.TempDir()
			m := open(t, eng, dir, engine.Options{})
			p := onePartition(t, m, "t")
			ctx := ctxT(t)

			_, err := p.Append(batchtest.Plain(t, 2)) // 0-1
			require.NoError(t, err)
			appendTxn(t, p, txnBatch(t, 1, 0, 0, 2, "aborted"))   // 2-3
			appendTxn(t, p, txnBatch(t, 2, 0, 0, 1, "committed")) // 4
			end, err := p.Append(batchtest.Plain(t, 1))           // 5
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctx, end.LastOffset+1))
			assert.Equal(t, int64(2), p.LastStableOffset(), "producer 1's open transaction holds it")

			r, err := p.ReadCommitted(0, 1<<20, nil)
			require.NoError(t, err)
			assert.Len(t, batchtest.MustDecode(t, r.Records), 2, "only the records before the first open transaction")

			mark, err := p.AppendMarker(batch.Producer{ID: 1, Epoch: 0}, batch.Marker{Commit: false}) // 6
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctx, mark))
			assert.Equal(t, int64(4), p.LastStableOffset(), "producer 2's transaction is still open")
			last, err := p.AppendMarker(batch.Producer{ID: 2, Epoch: 0}, batch.Marker{Commit: true}) // 7
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctx, last))
			assert.Equal(t, last, p.LastStableOffset())

			check := func(p *partition.Partition) {
				r, err := p.ReadCommitted(0, 1<<20, nil)
				require.NoError(t, err)
				assert.Equal(t, []partition.Aborted{{ProducerID: 1, First: 2, Last: 6}}, r.Aborted)
				r, err = p.ReadCommitted(7, 1<<20, nil)
				require.NoError(t, err)
				assert.Empty(t, r.Aborted, "no aborted transaction ends at or after 7")
			}
			check(p)
			if eng == memory.Name {
				return // nothing to restart from
			}

			// A restart rebuilds the aborted index from the snapshot and the log.
			require.NoError(t, m.Close())
			m = open(t, eng, dir, engine.Options{})
			lead(t, m, "t", 1)
			p, err = m.Partition("t", 0)
			require.NoError(t, err)
			require.NoError(t, p.WaitHighWatermark(ctx, last))
			check(p)
		})
	}
}

func TestTxnMarkerFencing(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	appendTxn(t, p, txnBatch(t, 1, 3, 0, 1, "x"))
	_, err := p.AppendMarker(batch.Producer{ID: 1, Epoch: 2}, batch.Marker{Commit: true})
	assert.ErrorIs(t, err, kerr.InvalidProducerEpoch)
	_, err = p.AppendMarker(batch.Producer{ID: 1, Epoch: 3}, batch.Marker{Commit: true, CoordinatorEpoch: 5})
	require.NoError(t, err)
	_, err = p.AppendMarker(batch.Producer{ID: 1, Epoch: 3}, batch.Marker{Commit: true, CoordinatorEpoch: 4})
	assert.ErrorIs(t, err, kerr.TransactionCoordinatorFenced)
}

// A producer's next transaction (KIP-890's second part: its epoch bumped)
// that reaches the partition before its last one's marker is refused with
// CONCURRENT_TRANSACTIONS; MarkerLanded, taken before that write, is
// closed by the marker, and the write goes in after it.
func TestTxnMarkerLandedWakes(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	appendTxn(t, p, txnBatch(t, 7, 0, 0, 2, "first"))

	landed := p.MarkerLanded()
	next := txnBatch(t, 7, 1, 0, 1, "next")
	_, err := p.Append(next)
	require.ErrorIs(t, err, kerr.ConcurrentTransactions, "the last transaction's marker is not in")
	select {
	case <-landed:
		t.Fatal("closed before any marker")
	default:
	}
	assert.Equal(t, landed, p.MarkerLanded(), "every waiter shares the next marker's channel")

	_, err = p.AppendMarker(batch.Producer{ID: 7, Epoch: 0}, batch.Marker{Commit: true})
	require.NoError(t, err)
	select {
	case <-landed:
	default:
		t.Fatal("the marker did not close MarkerLanded")
	}
	assert.NotEqual(t, landed, p.MarkerLanded(), "a later waiter waits for the next marker")
	appendTxn(t, p, next)
}
