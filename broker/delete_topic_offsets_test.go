package broker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka/broker/brokertest"
)

// A topic deleted and created again under the same name starts with no
// committed offsets: a group must not resume at an offset of the old log.
func TestDeleteTopicForgetsCommittedOffsets(t *testing.T) {
	b := brokertest.Start(t, brokertest.Engine("memory"))
	adm := b.Admin(t)
	ctx := context.Background()
	b.CreateTopic(t, "orders", 2)

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 42, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "billing", offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	fetched, err := adm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	got, ok := fetched.Lookup("orders", 0)
	require.True(t, ok, "the commit is visible before the delete")
	require.Equal(t, int64(42), got.At)

	dr, err := adm.DeleteTopics(ctx, "orders")
	require.NoError(t, err)
	require.NoError(t, dr.Error())
	b.CreateTopic(t, "orders", 2)

	fetched, err = adm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	got, ok = fetched.Lookup("orders", 0)
	if ok {
		assert.Equal(t, int64(-1), got.At, "the recreated topic inherits no committed offset")
	}
}
