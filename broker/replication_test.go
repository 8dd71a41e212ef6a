package broker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
)

// TestMinInsyncReplicas: with min.insync.replicas 3 on RF 3, acks=all is
// refused with NOT_ENOUGH_REPLICAS once a replica is gone, before anything
// is appended, while acks=1 is still accepted; the replica's return
// restores acks=all.
func TestMinInsyncReplicas(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	three := "3"
	c.CreateTopic(t, "m", 1, 3, map[string]*string{cluster.ConfigMinInsyncReplicas: &three})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := c.Client(t, kgo.DefaultProduceTopic("m"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0))
	require.NoError(t, all.ProduceSync(ctx, &kgo.Record{Value: []byte("in sync")}).FirstErr())

	leader := c.Nodes[0].Server.Metadata()
	tp, _ := leader.Topic("m")
	victim := tp.Partitions[0].Replicas[0]
	if victim == tp.Partitions[0].Leader {
		victim = tp.Partitions[0].Replicas[1]
	}
	c.Node(victim).Stop(t)
	require.Eventually(t, func() bool {
		err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("under min ISR")}).FirstErr()
		return errors.Is(err, kerr.NotEnoughReplicas)
	}, 30*time.Second, 50*time.Millisecond, "acks=all refused with NOT_ENOUGH_REPLICAS")
	one := c.Client(t, kgo.DefaultProduceTopic("m"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	require.NoError(t, one.ProduceSync(ctx, &kgo.Record{Value: []byte("acks=1")}).FirstErr())

	c.Node(victim).Start(t)
	require.Eventually(t, func() bool {
		return all.ProduceSync(ctx, &kgo.Record{Value: []byte("back in sync")}).FirstErr() == nil
	}, 60*time.Second, 100*time.Millisecond, "acks=all accepted once the ISR is whole again")
}

// TestReplicationMetrics: the leaders' and followers' replication shows in
// /metrics: bytes out on the leader and in on the followers, no
// under-replicated partition while all are up, one once a follower stops.
func TestReplicationMetrics(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "r", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(t, kgo.DefaultProduceTopic("r"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range 20 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr())
	}
	tp, _ := c.Nodes[0].Server.Metadata().Topic("r")
	leader := c.Node(tp.Partitions[0].Leader)
	assert.Greater(t, metric(t, leader.Server, "minikafka_replication_bytes_out_total"), 20_000.0)
	for _, id := range tp.Partitions[0].Replicas {
		if id != leader.Config.NodeID {
			assert.Greater(t, metric(t, c.Node(id).Server, "minikafka_replication_bytes_in_total"), 20_000.0, "follower %d", id)
		}
	}
	assert.Zero(t, metric(t, leader.Server, "minikafka_under_replicated_partitions"))

	var follower int32
	for _, id := range tp.Partitions[0].Replicas {
		if id != leader.Config.NodeID {
			follower = id
		}
	}
	c.Node(follower).Stop(t)
	require.Eventually(t, func() bool {
		return metric(t, leader.Server, "minikafka_under_replicated_partitions") == 1
	}, 30*time.Second, 20*time.Millisecond, "the partition is under-replicated")
}

var metricLine = regexp.MustCompile(`(?m)^(\w+)(?:\{[^}]*\})? (\S+)$`)

// metric scrapes s's /metrics and returns the value of name (summed over
// its label sets).
func metric(t *testing.T, s *broker.Server, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	sum := 0.0
	for _, m := range metricLine.FindAllStringSubmatch(string(body), -1) {
		if m[1] == name {
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			sum += v
		}
	}
	return sum
}

// TestBrokerThatIsNotAVoter: a fourth broker, outside the quorum of three,
// follows the voters' metadata log (Fetch on __cluster_metadata), registers,
// hosts and leads replicas and serves clients like the others; restarted,
// it fetches the metadata again and rejoins.
func TestBrokerThatIsNotAVoter(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "all", 4, 4, nil)
	observer := c.Node(4)
	tp, ok := observer.Server.Metadata().Topic("all")
	require.True(t, ok, "the observer's metadata has the topic")
	leads := 0
	for _, p := range tp.Partitions {
		assert.Len(t, p.ISR, 4)
		if p.Leader == 4 {
			leads++
		}
	}
	assert.Equal(t, 1, leads, "the observer leads its share of the partitions")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(observer.Addr), kgo.DefaultProduceTopic("all"), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer cl.Close()
	for i := range 40 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte("v")}).FirstErr())
	}

	observer.Stop(t)
	observer.Start(t)
	require.Eventually(t, func() bool {
		img := observer.Server.Metadata()
		t, ok := img.Topic("all")
		if !ok {
			return false
		}
		for _, p := range t.Partitions {
			if len(p.ISR) != 4 {
				return false
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "the restarted observer catches up and rejoins every ISR")
}

// TestBrokerGivenOtherVotersIsRefused: a broker outside the quorum whose
// -controllers names only some of the voters (and never the leader, so
// that it would otherwise ask the others forever) learns the quorum's
// voters from the first one that answers and stops with an error that
// says what to fix, without registering.
func TestBrokerGivenOtherVotersIsRefused(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	leader := waitQuorumLeader(t, c)
	var some []broker.Voter
	for _, v := range c.Node(1).Config.Controllers {
		if v.ID != leader {
			some = append(some, v)
		}
	}
	cfg := c.Node(1).Config
	cfg.NodeID, cfg.Controllers, cfg.ControllerAddr, cfg.Dir = 4, some, "", t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.AdvertisedAddr = ln.Addr().String()
	s, err := broker.New(cfg)
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	select {
	case err := <-s.Failed():
		require.ErrorContains(t, err, "give every node the same -controllers list")
		assert.ErrorContains(t, err, "[1 2 3]")
	case <-time.After(30 * time.Second):
		t.Fatal("a broker given two of the three voters did not stop")
	}
	_, registered := c.Node(1).Server.Metadata().Broker(4)
	assert.False(t, registered, "the refused broker never registered")
}

// waitQuorumLeader returns the node id of the controller quorum's leader,
// as DescribeQuorum names it.
func waitQuorumLeader(t *testing.T, c *brokertest.Cluster) int32 {
	t.Helper()
	cl := c.Client(t)
	var leader int32
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		leader = resp.Topics[0].Partitions[0].LeaderID
		return leader > 0
	}, 30*time.Second, 10*time.Millisecond)
	return leader
}
