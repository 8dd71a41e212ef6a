package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
)

func strp(s string) *string { return &s }

// describeOn is DescribeConfigs of one resource asked of node nd itself.
func describeOn(ctx context.Context, cl *kgo.Client, nd *brokertest.Node, typ kmsg.ConfigResourceType, name string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		return nil, err // the client learns every broker
	}
	resp, err := cl.Broker(int(nd.Config.NodeID)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	sr := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if err := kerr.ErrorForCode(sr.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe %s on broker %d: %w", name, nd.Config.NodeID, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range sr.Configs {
		out[c.Name] = c
	}
	return out, nil
}

// requireConfigEverywhere waits until every running node describes config
// key of the resource with value and source.
func requireConfigEverywhere(ctx context.Context, t *testing.T, c *brokertest.Cluster, cl *kgo.Client, typ kmsg.ConfigResourceType, name, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	for _, nd := range c.Nodes {
		if nd.Server == nil {
			continue
		}
		var last kmsg.DescribeConfigsResponseResourceConfig
		var lastErr error
		require.Eventually(t, func() bool {
			var got map[string]kmsg.DescribeConfigsResponseResourceConfig
			got, lastErr = describeOn(ctx, cl, nd, typ, name)
			last = got[key]
			return last.Value != nil && *last.Value == value && last.Source == source
		}, 10*time.Second, 10*time.Millisecond, "broker %d: %s=%s from %v, last %v from %v (%v)", nd.Config.NodeID, key, value, source, last.Value, last.Source, lastErr)
	}
}

// The kadm calls against three brokers: IncrementalAlterConfigs,
// AlterConfigs (the whole set), their validation, the errors, broker
// resources; every broker describes the result.
func TestAlterConfigsKadm(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "cf", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	topic := kmsg.ConfigResourceTypeTopic

	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cluster.ConfigRetentionMs, Value: strp("3600000")},
		{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("2")},
	}, "cf")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)
	// The others apply it from their metadata; kadm's describe goes to any.
	require.Eventually(t, func() bool {
		rcs, err := adm.DescribeTopicConfigs(ctx, "cf")
		require.NoError(t, err)
		rc, err := rcs.On("cf", nil)
		require.NoError(t, err)
		got := map[string]string{}
		for _, cfg := range rc.Configs {
			if cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				got[cfg.Key] = cfg.MaybeValue()
			}
		}
		return assert.ObjectsAreEqual(map[string]string{cluster.ConfigRetentionMs: "3600000", cluster.ConfigMinInsyncReplicas: "2"}, got)
	}, 10*time.Second, 10*time.Millisecond)

	// The broker that answered describes the change at once: it waited for
	// its own metadata to have it.
	for _, nd := range c.Nodes {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = topic, "cf"
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		value := strconv.Itoa(1000 * int(nd.Config.NodeID))
		rc.Name, rc.Op, rc.Value = cluster.ConfigRetentionBytes, kmsg.IncrementalAlterConfigOpSet, &value
		rr.Configs = append(rr.Configs, rc)
		req.Resources = append(req.Resources, rr)
		resp, err := cl.Broker(int(nd.Config.NodeID)).Request(ctx, req)
		require.NoError(t, err)
		require.Zero(t, resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)
		cfgs, err := describeOn(ctx, cl, nd, topic, "cf")
		require.NoError(t, err)
		got := cfgs[cluster.ConfigRetentionBytes]
		require.Equal(t, value, *got.Value, "broker %d", nd.Config.NodeID)
		require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, got.Source)
	}
	requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigRetentionMs, "3600000", kmsg.ConfigSourceDynamicTopicConfig)

	t.Run("validate only", func(t *testing.T) {
		resps, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigRetentionMs, Value: strp("5")}}, "cf")
		require.NoError(t, err)
		require.NoError(t, resps[0].Err)
		requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigRetentionMs, "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	})
	t.Run("invalid values", func(t *testing.T) {
		for _, ac := range []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: cluster.ConfigRetentionMs, Value: strp("soon")},
			{Op: kadm.SetConfig, Name: "flush.messages", Value: strp("1")},
			{Op: kadm.AppendConfig, Name: cluster.ConfigCleanupPolicy, Value: strp("compact")},
			{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("4")},
		} {
			resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{ac}, "cf")
			require.NoError(t, err)
			require.ErrorIs(t, resps[0].Err, kerr.InvalidConfig, "%s=%s", ac.Name, *ac.Value)
			assert.Contains(t, resps[0].ErrMessage, ac.Name)
		}
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: cluster.ConfigRetentionMs, Value: strp("1")}}, "cf")
		require.NoError(t, err)
		require.ErrorIs(t, resps[0].Err, kerr.InvalidRequest, "APPEND to a config that is not a list")
		resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigRetentionMs, Value: strp("1")}}, "nope")
		require.NoError(t, err)
		require.ErrorIs(t, resps[0].Err, kerr.UnknownTopicOrPartition)
	})
	t.Run("delete", func(t *testing.T) {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: cluster.ConfigMinInsyncReplicas}}, "cf")
		require.NoError(t, err)
		require.NoError(t, resps[0].Err)
		requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigMinInsyncReplicas, "1", kmsg.ConfigSourceDefaultConfig)
	})
	t.Run("AlterConfigs replaces the set", func(t *testing.T) {
		resps, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: cluster.ConfigRetentionBytes, Value: strp("1048576")}}, "cf")
		require.NoError(t, err)
		require.NoError(t, resps[0].Err)
		requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigRetentionBytes, "1048576", kmsg.ConfigSourceDynamicTopicConfig)
		requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigRetentionMs, cluster.ConfigDefaults[cluster.ConfigRetentionMs], kmsg.ConfigSourceDefaultConfig)
	})
	t.Run("broker resources", func(t *testing.T) {
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.dirs", Value: strp("/elsewhere")}})
		require.NoError(t, err)
		require.ErrorIs(t, resps[0].Err, kerr.InvalidRequest)
		assert.Contains(t, resps[0].ErrMessage, "cannot update these configs dynamically")
		resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("2")}}, 2)
		require.NoError(t, err)
		require.ErrorIs(t, resps[0].Err, kerr.InvalidRequest, "one broker's resource")

		resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("2")}})
		require.NoError(t, err)
		require.NoError(t, resps[0].Err)
		requireConfigEverywhere(ctx, t, c, cl, kmsg.ConfigResourceTypeBroker, "", cluster.ConfigMinInsyncReplicas, "2", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		requireConfigEverywhere(ctx, t, c, cl, topic, "cf", cluster.ConfigMinInsyncReplicas, "2", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	})
	t.Run("advertised", func(t *testing.T) {
		vs, err := adm.ApiVersions(ctx)
		require.NoError(t, err)
		for _, v := range vs {
			require.NoError(t, v.Err)
			for _, key := range []int16{33, 44} {
				_, maxV, ok := v.KeyVersions(key)
				require.True(t, ok, "broker %d advertises %s", v.NodeID, kmsg.NameForKey(key))
				assert.Equal(t, map[int16]int16{33: 2, 44: 1}[key], maxV)
			}
		}
	})
}

// min.insync.replicas changed on a live topic, and as the cluster-wide
// default, takes effect on the leader without a restart: raised to 3 with
// a follower stopped, acks=all is refused with NOT_ENOUGH_REPLICAS;
// lowered again, accepted.
func TestDynamicMinInsyncReplicas(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "mi", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Not idempotent, and a short produce timeout: a batch appended just
	// before min.insync.replicas rose waits for a high watermark that no
	// longer moves, and an idempotent producer would retry it until the
	// delivery timeout instead of failing it.
	all := c.Client(t, kgo.DefaultProduceTopic("mi"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0),
		kgo.DisableIdempotentWrite(), kgo.ProduceRequestTimeout(2*time.Second))
	require.NoError(t, all.ProduceSync(ctx, &kgo.Record{Value: []byte("in sync")}).FirstErr())

	tp, _ := c.Nodes[0].Server.Metadata().Topic("mi")
	p := tp.Partitions[0]
	victim := p.Replicas[0]
	if victim == p.Leader {
		victim = p.Replicas[1]
	}
	c.Node(victim).Stop(t)
	adm := kadm.NewClient(c.Client(t))
	produces := func() error { return all.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr() }
	require.Eventually(t, func() bool { return produces() == nil }, 30*time.Second, 50*time.Millisecond, "min.insync.replicas 1: accepted")

	alter := func(acs []kadm.AlterConfig, topics ...string) {
		t.Helper()
		var resps kadm.AlterConfigsResponses
		var err error
		if len(topics) == 0 {
			resps, err = adm.AlterBrokerConfigs(ctx, acs)
		} else {
			resps, err = adm.AlterTopicConfigs(ctx, acs, topics...)
		}
		require.NoError(t, err)
		require.NoError(t, resps[0].Err, resps[0].ErrMessage)
	}
	refused := func(msg string) {
		t.Helper()
		var last atomic.Value // the condition may still run when Eventually gives up
		last.Store("none yet")
		ok := assert.Eventually(t, func() bool {
			err := produces()
			last.Store(fmt.Sprint(err))
			return errors.Is(err, kerr.NotEnoughReplicas)
		}, 30*time.Second, 50*time.Millisecond, msg)
		if !ok { // what each broker holds, to tell a late metadata from a stuck produce
			for _, nd := range c.Nodes {
				if nd.Server == nil {
					continue
				}
				tp, _ := nd.Server.Metadata().Topic("mi")
				p, _ := nd.Server.Partitions().Partition("mi", 0)
				st, lead := p.LeaderStatus(time.Now())
				t.Logf("broker %d: last produce %v; image at %d: cluster-wide %v, topic configs %v, %+v; leads %v, status %+v",
					nd.Config.NodeID, last.Load(), nd.Server.Metadata().Offset(), nd.Server.Metadata().ClusterConfigs(), tp.Configs, tp.Partitions[0], lead, st)
			}
			t.FailNow()
		}
	}
	accepted := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool { return produces() == nil }, 30*time.Second, 50*time.Millisecond, msg)
	}

	alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("3")}}, "mi")
	refused("the topic's min.insync.replicas raised to 3")
	alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("2")}}, "mi")
	accepted("lowered to 2")

	alter([]kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: cluster.ConfigMinInsyncReplicas}}, "mi")
	alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigMinInsyncReplicas, Value: strp("3")}})
	refused("the cluster-wide default raised to 3")
	alter([]kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: cluster.ConfigMinInsyncReplicas}})
	accepted("the cluster-wide default deleted")
}

// segmentFiles counts the segment files of the log of topic's partition 0
// on node nd.
func segmentFiles(t *testing.T, nd *brokertest.Node, topic string) int {
	t.Helper()
	p, err := nd.Server.Partitions().Partition(topic, 0)
	require.NoError(t, err)
	id := p.LogID().String()
	n := 0
	require.NoError(t, filepath.WalkDir(nd.Config.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".log") && strings.Contains(path, id) {
			n++
		}
		return nil
	}))
	return n
}

// retention.ms, segment.bytes and max.message.bytes changed on a live
// topic reach every replica: old batches go at the next retention check,
// new segments have the new size, a batch over the new limit is refused.
func TestDynamicLogConfigs(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "lg", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(t, kgo.DefaultProduceTopic("lg"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(c.Client(t))
	old := time.Now().Add(-time.Hour)
	for range 5 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 500), Timestamp: old}).FirstErr())
	}
	before := map[int32]int{}
	for _, nd := range c.Nodes {
		require.NoError(t, nd.Server.Partitions().EnforceRetention())
		p, err := nd.Server.Partitions().Partition("lg", 0)
		require.NoError(t, err)
		require.Zero(t, p.StartOffset(), "broker %d: the default retention keeps an hour-old batch", nd.Config.NodeID)
		before[nd.Config.NodeID] = segmentFiles(t, nd, "lg")
	}

	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: cluster.ConfigRetentionMs, Value: strp("60000")},
		{Op: kadm.SetConfig, Name: cluster.ConfigSegmentBytes, Value: strp("2048")},
		{Op: kadm.SetConfig, Name: cluster.ConfigMaxMessageBytes, Value: strp("4096")},
	}, "lg")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err, resps[0].ErrMessage)
	requireConfigEverywhere(ctx, t, c, c.Client(t), kmsg.ConfigResourceTypeTopic, "lg", cluster.ConfigSegmentBytes, "2048", kmsg.ConfigSourceDynamicTopicConfig)

	for range 10 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr())
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 8000)}).FirstErr()
	require.ErrorIs(t, err, kerr.MessageTooLarge, "over max.message.bytes 4096")
	for _, nd := range c.Nodes {
		p, err := nd.Server.Partitions().Partition("lg", 0)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return p.HighWatermark() >= 15 }, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, nd.Server.Partitions().EnforceRetention())
		assert.Equal(t, int64(5), p.StartOffset(), "broker %d: the hour-old batches are past retention.ms 60000", nd.Config.NodeID)
		assert.GreaterOrEqual(t, segmentFiles(t, nd, "lg")-before[nd.Config.NodeID], 3,
			"broker %d: 10 KB more in segments of 2 KiB (clamped to the engine's 1 KiB minimum at most)", nd.Config.NodeID)
	}

	// retention.bytes: of the ten batches of about 1 KB, those that keep
	// the log within 3000 bytes stay.
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigRetentionBytes, Value: strp("3000")}}, "lg")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err, resps[0].ErrMessage)
	requireConfigEverywhere(ctx, t, c, c.Client(t), kmsg.ConfigResourceTypeTopic, "lg", cluster.ConfigRetentionBytes, "3000", kmsg.ConfigSourceDynamicTopicConfig)
	for _, nd := range c.Nodes {
		p, err := nd.Server.Partitions().Partition("lg", 0)
		require.NoError(t, err)
		require.NoError(t, nd.Server.Partitions().EnforceRetention())
		assert.Equal(t, int64(13), p.StartOffset(), "broker %d: two batches of about 1 KB left under retention.bytes 3000", nd.Config.NodeID)
	}
}

// unclean.leader.election.enable set on a live topic is read by the
// controller's next election: a partition whose only in-sync replica is
// gone stays offline while it is off, and its other replica leads once it
// is on.
func TestDynamicUncleanLeaderElection(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, brokertest.Engine("segment"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.Client(t)
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "un", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{4, 3} // 4 is no voter: stopping it keeps the quorum
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10000
	cr, err := create.RequestWith(ctx, cl.Broker(1))
	require.NoError(t, err)
	require.Zero(t, cr.Topics[0].ErrorCode)
	partition := func() cluster.Partition {
		tp, ok := c.Node(1).Server.Metadata().Topic("un")
		require.True(t, ok)
		return tp.Partitions[0]
	}
	require.Eventually(t, func() bool { p := partition(); return p.Leader == 4 && len(p.ISR) == 2 }, 30*time.Second, 10*time.Millisecond)

	c.Node(3).Stop(t)
	require.Eventually(t, func() bool { return len(partition().ISR) == 1 }, 30*time.Second, 10*time.Millisecond, "3 left the ISR")
	c.Node(4).Stop(t)
	require.Eventually(t, func() bool { return partition().Leader == cluster.NoLeader }, 30*time.Second, 10*time.Millisecond, "offline")
	c.Node(3).Start(t)
	require.Equal(t, cluster.NoLeader, partition().Leader, "unfencing 3 elected nobody: it is out of sync and the election clean")

	adm := kadm.NewClient(c.Client(t))
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigUncleanLeaderElection, Value: strp("true")}}, "un")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err, resps[0].ErrMessage)
	require.Eventually(t, func() bool { return partition().Leader == 3 }, 30*time.Second, 10*time.Millisecond, "3 elected uncleanly")
}

// A broker restarted after a change has it from the metadata log: it
// describes it, and its reopened log rolls at the topic's segment.bytes,
// not at the store's default.
func TestDynamicConfigsAfterRestart(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "rs", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: cluster.ConfigSegmentBytes, Value: strp("2048")}}, "rs")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err, resps[0].ErrMessage)
	tp, _ := c.Nodes[0].Server.Metadata().Topic("rs")
	nd := c.Node(tp.Partitions[0].Replicas[0])
	if nd.Config.NodeID == tp.Partitions[0].Leader {
		nd = c.Node(tp.Partitions[0].Replicas[1])
	}
	nd.Stop(t)
	nd.Start(t)
	cl := c.Client(t)
	requireConfigEverywhere(ctx, t, c, cl, kmsg.ConfigResourceTypeTopic, "rs", cluster.ConfigSegmentBytes, "2048", kmsg.ConfigSourceDynamicTopicConfig)

	require.Eventually(t, func() bool {
		p, err := nd.Server.Partitions().Partition("rs", 0)
		return err == nil && p.Role().Leader >= 0 && !p.Role().Local
	}, 10*time.Second, 10*time.Millisecond)
	before := segmentFiles(t, nd, "rs")
	prod := c.Client(t, kgo.DefaultProduceTopic("rs"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range 10 {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr())
	}
	p, err := nd.Server.Partitions().Partition("rs", 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.EndOffset() >= 10 }, 10*time.Second, 10*time.Millisecond, "the restarted follower has fetched")
	assert.GreaterOrEqual(t, segmentFiles(t, nd, "rs")-before, 3, "10 KB in segments of 2 KiB after the reopen")
}
