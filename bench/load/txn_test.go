package load

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// TestTransactions: transactional clients commit and abort what they are
// told, count only the committed records as produced, and a read_committed
// consumer reads exactly those while a read_uncommitted one reads all.
func TestTransactions(t *testing.T) {
	eachServer(t, func(t *testing.T, c Client) {
		ctx := interoptest.Context(t)
		require.NoError(t, EnsureTopic(ctx, c, "txn", 3))
		// 50 records a client: 5 transactions of 10, the 2nd and 4th aborted.
		pr, err := Produce(ctx, ProduceConfig{
			Client: c, Topic: "txn", Records: 100, RecordBytes: 50, Acks: "all", Idempotent: true, Clients: 2,
			MetadataMinAge: 10 * time.Millisecond, Txn: &Txn{Records: 10, AbortEvery: 2, ID: "t"},
		})
		require.NoError(t, err)
		assert.Zero(t, pr.Errors, pr.FirstError)
		assert.Equal(t, int64(60), pr.Records, "committed records only")
		assert.Equal(t, int64(60*50), pr.Bytes)
		assert.Equal(t, TxnResult{Committed: 6, Aborted: 4, AbortedRecords: 40},
			TxnResult{Committed: pr.Txns.Committed, Aborted: pr.Txns.Aborted, AbortedRecords: pr.Txns.AbortedRecords})
		assert.Equal(t, int64(6), pr.Txns.Latency.Count)
		assert.Equal(t, int64(100), pr.Latency.Count, "every acknowledged record has its latency")

		tp, err := NewTxnProducer(ProduceConfig{Client: c, Topic: "txn", RecordBytes: 20,
			MetadataMinAge: 10 * time.Millisecond, Txn: &Txn{ID: "steps"}})
		require.NoError(t, err)
		defer tp.Close()
		require.NoError(t, tp.Begin(ctx, 5))
		require.Error(t, tp.Begin(ctx, 5), "one transaction at a time")
		require.NoError(t, tp.End(ctx, true))
		require.NoError(t, tp.Begin(ctx, 7))
		require.NoError(t, tp.End(ctx, false))
		require.Error(t, tp.End(ctx, true), "nothing open")

		assert.Equal(t, int64(65), readAll(t, ctx, c, true), "read_committed")
		assert.Equal(t, int64(112), readAll(t, ctx, c, false), "read_uncommitted")
	})
}

// readAll counts the records of topic txn that arrive within a second.
func readAll(t *testing.T, ctx context.Context, c Client, committed bool) int64 {
	t.Helper()
	cr, err := Consume(ctx, ConsumeConfig{Client: c, Topic: "txn", Duration: time.Second, ReadCommitted: committed})
	require.NoError(t, err)
	return cr.Records
}
