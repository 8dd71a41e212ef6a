package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// slowOpen is the memory engine with an Open that takes openDelay: a
// broker's reconciler then needs that long to open a new partition.
const (
	slowOpen  = "slow-open"
	openDelay = 200 * time.Millisecond
)

func init() {
	engine.Register(engine.Driver{
		Name: slowOpen,
		Caps: engine.Capabilities{CustomFS: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			time.Sleep(openDelay)
			return memory.Open(opts), nil
		},
	})
}

// TestProduceWaitsForThePartitionBeingOpened: a topic created through one
// broker and placed on another is produced to at once, before the other
// has opened it. The metadata names that broker the leader, so it waits
// for its reconciler instead of answering NOT_LEADER_OR_FOLLOWER, which
// would send the client to refresh its metadata and back (10 ms and more
// for franz-go, 100 ms for librdkafka).
func TestProduceWaitsForThePartitionBeingOpened(t *testing.T) {
	c := brokertest.StartCluster(t, 2, brokertest.Engine(slowOpen), brokertest.Configure(func(c *broker.Config) { c.AutoCreate = false }))
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl) // the client learns both brokers
	require.NoError(t, err)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "elsewhere", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{2}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10000
	cr, err := create.RequestWith(ctx, cl.Broker(1))
	require.NoError(t, err)
	require.Len(t, cr.Topics, 1)
	require.Zero(t, cr.Topics[0].ErrorCode, "created through broker 1")
	// Once broker 2's metadata has the topic, its reconciler is opening the
	// partition, for openDelay.
	require.Eventually(t, func() bool {
		_, ok := c.Node(2).Server.Metadata().Topic("elsewhere")
		return ok
	}, 10*time.Second, time.Millisecond)

	produce := produceRequest("elsewhere", 1, batchtest.Plain(t, 1))
	began := time.Now()
	pr, err := produce.RequestWith(ctx, cl.Broker(2))
	require.NoError(t, err)
	require.Len(t, pr.Topics, 1)
	require.Len(t, pr.Topics[0].Partitions, 1)
	p := pr.Topics[0].Partitions[0]
	assert.Zero(t, p.ErrorCode, "broker 2 waited for its partition: %v", p.ErrorCode)
	assert.Zero(t, p.BaseOffset)
	t.Logf("answered in %v", time.Since(began))
}
