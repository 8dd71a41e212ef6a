package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// noAutoRebalance turns the controller's preferred-leader balancing off,
// so that only ElectLeaders moves a leadership back; on the segment
// engine, since a restarted replica must keep its log.
var noAutoRebalance = brokertest.Configure(func(c *broker.Config) {
	c.Cluster.LeaderRebalanceInterval = -1
	c.Engine = "segment"
})

// createAssigned creates topic with one partition on replicas, in order.
func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas ...int32) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10000
	cr, err := create.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, cr.Topics[0].ErrorCode, "%v", cr.Topics[0].ErrorMessage)
}

// partitionOn is partition 0 of topic in node id's metadata.
func partitionOn(t *testing.T, c *brokertest.Cluster, id int32, topic string) cluster.Partition {
	t.Helper()
	tp, ok := c.Node(id).Server.Metadata().Topic(topic)
	require.True(t, ok, "broker %d knows %s", id, topic)
	return tp.Partitions[0]
}

// requireLeaderEverywhere waits until every running node's Metadata
// answer names leader for partition 0 of topic.
func requireLeaderEverywhere(ctx context.Context, t *testing.T, c *brokertest.Cluster, cl *kgo.Client, topic string, leader int32) {
	t.Helper()
	for _, nd := range c.Nodes {
		if nd.Server == nil {
			continue
		}
		id := nd.Config.NodeID
		require.Eventually(t, func() bool {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
			return err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 &&
				resp.Topics[0].Partitions[0].Leader == leader
		}, 30*time.Second, 10*time.Millisecond, "broker %d's Metadata shows %d leading %s", id, leader, topic)
	}
}

// producer produces numbered records with acks=all, one at a time, until
// stopped.
type producer struct {
	mu    sync.Mutex
	acked []int
	stop  chan struct{}
	done  chan struct{}
}

func startProducer(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string) *producer {
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	p := &producer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			r := &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err == nil {
				p.mu.Lock()
				p.acked = append(p.acked, i)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// count is how many records were acknowledged so far.
func (p *producer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops the producer and returns the numbers acknowledged.
func (p *producer) finish() []int {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

// consumeAll reads partition 0 of topic from the start to its end.
func consumeAll(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string) []int {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ends, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	end, _ := ends.Lookup(topic, 0)
	require.NoError(t, end.Err)
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []int
	for len(got) < int(end.Offset) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) {
			var n int
			_, err := fmt.Sscanf(string(r.Value), "%d", &n)
			require.NoError(t, err)
			got = append(got, n)
		})
	}
	return got
}

// A preferred election through kadm moves a leadership that a restart took
// away back to the preferred replica: every broker's Metadata shows it,
// the leader epoch is bumped, and an acks=all producer running across it
// loses nothing.
func TestElectLeadersPreferred(t *testing.T) {
	c := brokertest.StartCluster(t, 3, noAutoRebalance)
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createAssigned(ctx, t, cl, "el", 2, 3, 1)
	requireLeaderEverywhere(ctx, t, c, cl, "el", 2)

	prod := startProducer(ctx, t, c, "el")
	c.Node(2).Stop(t)
	require.Equal(t, int32(3), partitionOn(t, c, 1, "el").Leader, "the controlled shutdown moved leadership to 3")
	c.Node(2).Start(t)
	require.Eventually(t, func() bool { return len(partitionOn(t, c, 1, "el").ISR) == 3 }, 30*time.Second, 10*time.Millisecond, "2 back in the ISR")
	before := partitionOn(t, c, 1, "el")
	require.Equal(t, int32(3), before.Leader, "with automatic balancing off, 3 still leads")

	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}}})
	require.NoError(t, err)
	r := res["el"][0]
	require.NoError(t, r.Err, r.ErrMessage)
	assert.Equal(t, kadm.ElectPreferredReplica, r.How)
	requireLeaderEverywhere(ctx, t, c, cl, "el", 2)
	after := partitionOn(t, c, 1, "el")
	assert.Equal(t, before.LeaderEpoch+1, after.LeaderEpoch, "leader epoch bumped once")

	// Keep producing through the new leader, then check the log.
	n := prod.count()
	require.Eventually(t, func() bool { return prod.count() > n+20 }, 30*time.Second, 10*time.Millisecond, "produced through the new leader")
	ack := prod.finish()
	got := consumeAll(ctx, t, c, "el")
	for _, n := range ack {
		require.Contains(t, got, n, "acknowledged record %d kept", n)
	}

	again, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}}})
	require.NoError(t, err)
	assert.ErrorIs(t, again["el"][0].Err, kerr.ElectionNotNeeded)
	assert.Contains(t, again["el"][0].ErrMessage, "already leads")

	// A null set: every partition; none needs an election.
	all, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	require.NoError(t, err)
	require.Contains(t, all, "el")
	assert.ErrorIs(t, all["el"][0].Err, kerr.ElectionNotNeeded)
}

// produceNumbered produces n numbered records from first with acks=all.
func produceNumbered(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, first, n int) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := first; i < first+n; i++ {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr())
	}
}

// electOn sends ElectLeaders for partition 0 of topic to broker id itself
// and returns that partition's answer.
func electOn(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, typ cluster.ElectionType, topic string) kmsg.ElectLeadersResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType, req.TimeoutMillis = int8(typ), 10000
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// An unclean election elects the out-of-sync replica that is the only one
// alive after every in-sync one stopped: it loses what it lacks, and the
// partition serves again.
func TestElectLeadersUnclean(t *testing.T) {
	c := brokertest.StartClusterOf(t, 5, 3, noAutoRebalance)
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	// 4 and 5 are no voters: stopping them keeps the quorum.
	createAssigned(ctx, t, cl, "un", 4, 5, 3)
	requireLeaderEverywhere(ctx, t, c, cl, "un", 4)
	produceNumbered(ctx, t, c, "un", 0, 10)

	c.Node(3).Stop(t)
	require.Eventually(t, func() bool { return len(partitionOn(t, c, 1, "un").ISR) == 2 }, 30*time.Second, 10*time.Millisecond, "3 left the ISR")
	produceNumbered(ctx, t, c, "un", 10, 10) // 3 lacks these
	c.Node(4).Stop(t)
	c.Node(5).Stop(t)
	require.Eventually(t, func() bool { return partitionOn(t, c, 1, "un").Leader == cluster.NoLeader }, 30*time.Second, 10*time.Millisecond, "offline")
	c.Node(3).Start(t)
	before := partitionOn(t, c, 1, "un")
	require.Equal(t, cluster.NoLeader, before.Leader, "3 is out of sync: no clean election elects it")

	pref := electOn(ctx, t, cl, 1, cluster.ElectPreferred, "un")
	assert.Equal(t, kerr.PreferredLeaderNotAvailable.Code, pref.ErrorCode, "%v", pref.ErrorMessage)
	unc := electOn(ctx, t, cl, 1, cluster.ElectUnclean, "un")
	require.Zero(t, unc.ErrorCode, "%v", unc.ErrorMessage)
	// The answer waited for broker 1's metadata to show the election.
	after := partitionOn(t, c, 1, "un")
	assert.Equal(t, int32(3), after.Leader)
	assert.Equal(t, []int32{3}, after.ISR, "a new ISR of the new leader alone")
	assert.Greater(t, after.LeaderEpoch, before.LeaderEpoch)
	requireLeaderEverywhere(ctx, t, c, cl, "un", 3)

	again, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"un": {0: {}}})
	require.NoError(t, err)
	assert.ErrorIs(t, again["un"][0].Err, kerr.ElectionNotNeeded)

	produceNumbered(ctx, t, c, "un", 100, 5)
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104}
	assert.Equal(t, want, consumeAll(ctx, t, c, "un"), "3's log, without the records it never had, then new ones")
}
