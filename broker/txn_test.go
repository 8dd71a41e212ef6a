package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
)

// consumeAll reads topic from the start to its end as isolation says.
func consumeIsolated(t *testing.T, b *brokertest.Broker, topic string, isolation kgo.IsolationLevel) []string {
	t.Helper()
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation), kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func TestTxnCommitAndAbort(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "tx", 2)
	ctx := t.Context()
	pr := b.Client(t, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("tx"))
	for i, commit := range []bool{true, false, true} {
		require.NoError(t, pr.BeginTransaction())
		for j := range 4 {
			pr.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("t%d-r%d", i, j)), Partition: int32(j % 2)}, nil)
		}
		require.NoError(t, pr.Flush(ctx))
		require.NoError(t, pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)), "transaction %d", i)
	}
	committed := consumeIsolated(t, b, "tx", kgo.ReadCommitted())
	assert.ElementsMatch(t, []string{"t0-r0", "t0-r1", "t0-r2", "t0-r3", "t2-r0", "t2-r1", "t2-r2", "t2-r3"}, committed)
	all := consumeIsolated(t, b, "tx", kgo.ReadUncommitted())
	assert.Len(t, all, 12, "read_uncommitted sees the aborted records too")
}
