package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
)

// TestTransactions: a transaction left open shows in list, describe and
// producers (with the offset it holds the last stable offset at); once it
// commits, list and describe say so.
func TestTransactions(t *testing.T) {
	b := brokertest.Start(t)
	ok(t, b.Addr, "", "topics", "create", "tx", "-partitions", "1")
	pr := b.Client(t, kgo.TransactionalID("cli-txn"), kgo.DefaultProduceTopic("tx"))
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr())

	out := lines(ok(t, b.Addr, "", "transactions", "list"))
	require.Len(t, out, 2)
	assert.Equal(t, []string{"TRANSACTIONAL_ID", "COORDINATOR", "PRODUCER_ID", "STATE"}, strings.Fields(out[0]))
	assert.Equal(t, "cli-txn", strings.Fields(out[1])[0])
	assert.Equal(t, "Ongoing", strings.Fields(out[1])[3])

	out = lines(ok(t, b.Addr, "", "transactions", "describe", "cli-txn"))
	require.Len(t, out, 2)
	f := strings.Fields(out[1])
	assert.Equal(t, "Ongoing", f[4])
	assert.Equal(t, "tx/0", f[len(f)-1])

	out = lines(ok(t, b.Addr, "", "transactions", "producers", "tx"))
	require.Len(t, out, 2)
	assert.Equal(t, "0", strings.Fields(out[1])[len(strings.Fields(out[1]))-1], "the open transaction starts at offset 0")

	require.NoError(t, pr.EndTransaction(t.Context(), kgo.TryCommit))
	require.Eventually(t, func() bool {
		out := lines(ok(t, b.Addr, "", "transactions", "list", "-state", "CompleteCommit"))
		return len(out) == 2
	}, 10*time.Second, 20*time.Millisecond)
	assert.Len(t, lines(ok(t, b.Addr, "", "transactions", "list", "-state", "Ongoing")), 1, "header only")
}
