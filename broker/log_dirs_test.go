package broker_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// logDirOf is topic's partition 0 as broker id describes its log dir.
func logDirOf(ctx context.Context, t *testing.T, adm *kadm.Client, id int32, topic string) (kadm.DescribedLogDir, kadm.DescribedLogDirPartition) {
	t.Helper()
	dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
	require.NoError(t, err)
	require.Len(t, dirs, 1, "broker %d has one log dir", id)
	for _, d := range dirs {
		require.NoError(t, d.Err)
		dp, ok := d.Topics.Lookup(topic, 0)
		require.True(t, ok, "broker %d holds %s-0", id, topic)
		return d, dp
	}
	panic("unreachable")
}

// DescribeLogDirs through kadm: every broker describes its own replica;
// sizes grow with what is produced, the leader and in-sync followers lag
// by 0, and a follower restarted behind shows its lag until it caught up.
func TestDescribeLogDirs(t *testing.T) {
	// One batch per fetch response: a follower catching up takes a round
	// trip per batch, long enough to be seen behind.
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"), noAutoRebalance,
		brokertest.Configure(func(c *broker.Config) { c.FetchMaxBytes = 1 }))
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createAssigned(ctx, t, cl, "ld", 1, 2, 3)
	requireLeaderEverywhere(ctx, t, c, cl, "ld", 1)

	var all kadm.DescribedAllLogDirs
	require.Eventually(t, func() bool {
		var err error
		all, err = adm.DescribeAllLogDirs(ctx, nil)
		require.NoError(t, err)
		n := 0
		for _, dirs := range all {
			for _, d := range dirs {
				if _, ok := d.Topics.Lookup("ld", 0); ok {
					n++
				}
			}
		}
		return n == 3
	}, 30*time.Second, 10*time.Millisecond, "every broker answers, with its replica of ld-0")
	before := map[int32]int64{}
	for id, dirs := range all {
		for name, d := range dirs {
			require.NoError(t, d.Err)
			assert.Equal(t, c.Node(id).Config.Dir, name, "broker %d's data directory", id)
			assert.Positive(t, d.TotalBytes, "statfs total")
			assert.Positive(t, d.UsableBytes, "statfs usable")
			assert.LessOrEqual(t, d.UsableBytes, d.TotalBytes)
			dp, ok := d.Topics.Lookup("ld", 0)
			require.True(t, ok, "broker %d lists ld-0", id)
			assert.Zero(t, dp.OffsetLag)
			assert.False(t, dp.IsFuture)
			before[id] = dp.Size
		}
	}

	pcl := c.Client(t, kgo.DefaultProduceTopic("ld"), kgo.RequiredAcks(kgo.AllISRAcks()))
	rnd := rand.New(rand.NewPCG(1, 2))
	produce := func(n int) {
		for range n {
			value := make([]byte, 1000) // random: compression keeps its size
			for i := range value {
				value[i] = byte(rnd.Uint32())
			}
			require.NoError(t, pcl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr())
		}
	}
	produce(50)
	for id := int32(1); id <= 3; id++ {
		// acks=all: every ISR member has the records; a follower learns
		// the HW that covers them with its next fetch.
		require.Eventually(t, func() bool {
			_, dp := logDirOf(ctx, t, adm, id, "ld")
			return dp.Size >= before[id]+50*1000 && dp.OffsetLag == 0
		}, 30*time.Second, 10*time.Millisecond, "broker %d: 50 KB more, no lag", id)
	}

	c.Node(3).Stop(t)
	produce(1000)
	_, lead := logDirOf(ctx, t, adm, 1, "ld")
	c.Node(3).Start(t)
	maxLag := int64(0)
	require.Eventually(t, func() bool {
		_, dp := logDirOf(ctx, t, adm, 3, "ld")
		maxLag = max(maxLag, dp.OffsetLag)
		return dp.OffsetLag == 0 && dp.Size == lead.Size
	}, 60*time.Second, time.Millisecond, "broker 3 caught up: no lag, the leader's size")
	t.Logf("broker 3 was seen up to %d offsets behind", maxLag)
	assert.Positive(t, maxLag, "broker 3 was seen behind while it caught up")
	assert.LessOrEqual(t, maxLag, int64(1000), "behind by at most what it missed")
	_, dp := logDirOf(ctx, t, adm, 1, "ld")
	assert.Zero(t, dp.OffsetLag, "the leader lags by 0")
}
