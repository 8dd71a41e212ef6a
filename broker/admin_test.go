package broker_test

import (
	"fmt"
	"net"
	"strconv"
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
	"github.com/minikafka/minikafka/interop/interoptest"
)

func TestMetadata(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.DefaultPartitions = 4 }))
	b.CreateTopic(t, "m", 3)
	adm := b.Admin(t)
	ctx := interoptest.Context(t)

	md, err := adm.Metadata(ctx)
	require.NoError(t, err)
	require.Len(t, md.Brokers, 1)
	assert.Equal(t, b.Config.NodeID, md.Brokers[0].NodeID)
	assert.Equal(t, b.Addr, kadmAddr(md.Brokers[0]))
	assert.Equal(t, b.Config.NodeID, md.Controller)
	assert.Equal(t, broker.DefaultClusterID, md.Cluster)
	td, ok := md.Topics["m"]
	require.True(t, ok, "topic m listed")
	require.NoError(t, td.Err)
	assert.NotEqual(t, kadm.TopicID{}, td.ID, "topic id (v10+)")
	require.Len(t, td.Partitions, 3)
	for _, p := range td.Partitions {
		assert.Equal(t, b.Config.NodeID, p.Leader)
		assert.Equal(t, []int32{b.Config.NodeID}, p.Replicas)
		assert.Equal(t, []int32{b.Config.NodeID}, p.ISR)
	}

	t.Run("unknown topic without auto-create", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		name := "nope"
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = false
		resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.MetadataResponse)
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode)
		_, exists := b.Metadata().Topic("nope")
		assert.False(t, exists, "not created")
	})
	t.Run("auto-create on metadata", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		name := "auto"
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.MetadataResponse)
		require.Len(t, resp.Topics, 1)
		assert.Zero(t, resp.Topics[0].ErrorCode)
		assert.Len(t, resp.Topics[0].Partitions, 4, "default partition count")
	})
	t.Run("illegal name", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		name := "bad/name"
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.MetadataResponse)
		assert.Equal(t, kerr.InvalidTopicException.Code, resp.Topics[0].ErrorCode)
	})
	t.Run("every version decodes", func(t *testing.T) {
		for v := int16(0); v <= 12; v++ {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(v)
			if v == 0 {
				req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty means all
			}
			resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.MetadataResponse)
			assert.NotEmpty(t, resp.Topics, "v%d lists topics", v)
		}
	})
}

func kadmAddr(b kadm.BrokerDetail) string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// TestMetadataNamesALiveController: every broker of a cluster names itself
// as ControllerID in Metadata and DescribeCluster, not the active
// controller (which a client may have just seen die), and takes the admin
// requests a client then sends it, forwarding them to the controller.
func TestMetadataNamesALiveController(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("memory"))
	ctx := interoptest.Context(t)
	for _, nd := range c.Nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(nd.Addr))
		require.NoError(t, err)
		defer cl.Close()
		// A broker fenced for a moment (a heartbeat late on a loaded
		// machine) names the active controller instead, as it should:
		// each answer is asked for until the broker names itself.
		named := func(ask func() (int32, error)) func() bool {
			return func() bool {
				id, err := ask()
				return err == nil && id == nd.Config.NodeID
			}
		}
		require.Eventually(t, named(func() (int32, error) {
			md := kmsg.NewPtrMetadataRequest()
			md.Topics = []kmsg.MetadataRequestTopic{}
			resp, err := md.RequestWith(ctx, cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.ControllerID, nil
		}), 15*time.Second, 10*time.Millisecond, "Metadata of broker %d names it as the controller", nd.Config.NodeID)
		require.Eventually(t, named(func() (int32, error) {
			resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.SeedBrokers()[0])
			if err != nil {
				return 0, err
			}
			return resp.ControllerID, nil
		}), 15*time.Second, 10*time.Millisecond, "DescribeCluster of broker %d names it as the controller", nd.Config.NodeID)

		// kadm sends CreateTopics to the controller Metadata named: this
		// broker, which forwards it.
		name := fmt.Sprintf("via-%d", nd.Config.NodeID)
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, name)
		require.NoError(t, err)
		require.NoError(t, resp.Err, "CreateTopics through broker %d", nd.Config.NodeID)
	}
}

func TestCreateDeleteTopics(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.AutoCreate = false }))
	adm := b.Admin(t)
	ctx := interoptest.Context(t)
	retention := "3600000"

	resp, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &retention}, "t1")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	assert.Equal(t, int32(2), resp.NumPartitions)
	assert.NotEqual(t, kadm.TopicID{}, resp.ID)

	for _, tc := range []struct {
		name    string
		topic   string
		parts   int32
		repl    int16
		configs map[string]*string
		want    error
	}{
		{"exists", "t1", 1, 1, nil, kerr.TopicAlreadyExists},
		{"illegal name", "a b", 1, 1, nil, kerr.InvalidTopicException},
		{"zero partitions", "t2", 0, 1, nil, kerr.InvalidPartitions},
		{"replication 3 on one broker", "t3", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"unknown config", "t4", 1, 1, map[string]*string{"no.such.config": &retention}, kerr.InvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := adm.CreateTopic(ctx, tc.parts, tc.repl, tc.configs, tc.topic)
			if err == nil {
				err = r.Err
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
	t.Run("validate only", func(t *testing.T) {
		r, err := adm.ValidateCreateTopics(ctx, 3, 1, nil, "t5")
		require.NoError(t, err)
		require.NoError(t, r.Error())
		_, exists := b.Metadata().Topic("t5")
		assert.False(t, exists)
	})

	t.Run("describe configs", func(t *testing.T) {
		rc, err := adm.DescribeTopicConfigs(ctx, "t1")
		require.NoError(t, err)
		c, err := rc.On("t1", nil)
		require.NoError(t, err)
		require.NoError(t, c.Err)
		got := map[string]kadm.Config{}
		for _, e := range c.Configs {
			got[e.Key] = e
		}
		assert.Equal(t, "3600000", *got["retention.ms"].Value)
		assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, got["retention.ms"].Source)
		assert.Equal(t, "delete", *got["cleanup.policy"].Value)
		assert.Equal(t, kmsg.ConfigSourceDefaultConfig, got["cleanup.policy"].Source)
	})
	t.Run("describe broker configs", func(t *testing.T) {
		rc, err := adm.DescribeBrokerConfigs(ctx, b.Config.NodeID)
		require.NoError(t, err)
		require.Len(t, rc, 1)
		require.NoError(t, rc[0].Err)
		assert.NotEmpty(t, rc[0].Configs)
	})

	t.Run("create partitions", func(t *testing.T) {
		r, err := adm.UpdatePartitions(ctx, 5, "t1")
		require.NoError(t, err)
		require.NoError(t, r.Error())
		info, _ := b.Metadata().Topic("t1")
		assert.Len(t, info.Partitions, 5)
		r, err = adm.UpdatePartitions(ctx, 3, "t1")
		require.NoError(t, err)
		require.ErrorIs(t, r.Error(), kerr.InvalidPartitions, "shrinking")
		r, err = adm.UpdatePartitions(ctx, 3, "nope")
		require.NoError(t, err)
		require.ErrorIs(t, r.Error(), kerr.UnknownTopicOrPartition)
	})

	t.Run("delete", func(t *testing.T) {
		cl := b.Client(t, kgo.DefaultProduceTopic("t1"))
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())
		r, err := adm.DeleteTopics(ctx, "t1")
		require.NoError(t, err)
		require.NoError(t, r.Error())
		_, exists := b.Metadata().Topic("t1")
		assert.False(t, exists)
		r, err = adm.DeleteTopics(ctx, "t1")
		require.NoError(t, err)
		require.ErrorIs(t, r.Error(), kerr.UnknownTopicOrPartition)
	})
}
