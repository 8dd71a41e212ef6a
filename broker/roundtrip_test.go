package broker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// produceN produces n records with values prefix-0.. round-robin over the
// topic's partitions and waits for every acknowledgement.
func produceN(t *testing.T, cl *kgo.Client, topic, prefix string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	require.NoError(t, cl.ProduceSync(interoptest.Context(t), recs...).FirstErr(), "produce")
}

// consumeN reads n records of topic from the start.
func consumeN(t *testing.T, b *brokertest.Broker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := interoptest.Context(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records before the deadline", len(got), n)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "rt", 3)
	produceN(t, b.Client(t, kgo.DefaultProduceTopic("rt")), "rt", "v", 300)

	got := consumeN(t, b, "rt", 300)
	require.Len(t, got, 300)
	seen := map[string]bool{}
	next := map[int32]int64{}
	for _, r := range got {
		assert.Equal(t, next[r.Partition], r.Offset, "partition %d offsets are dense and in order", r.Partition)
		next[r.Partition] = r.Offset + 1
		seen[string(r.Value)] = true
	}
	for i := range 300 {
		assert.True(t, seen[fmt.Sprintf("v-%d", i)], "record v-%d consumed", i)
	}
}

func TestProduceAcks(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks=0", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}},
		{"acks=1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"acks=all", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t)
			b.CreateTopic(t, "acks", 1)
			produceN(t, b.Client(t, tc.opts...), "acks", "a", 50)
			got := consumeN(t, b, "acks", 50)
			for i, r := range got {
				assert.Equal(t, fmt.Sprintf("a-%d", i), string(r.Value), "record %d", i)
			}
		})
	}
}
