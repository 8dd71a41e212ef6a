package broker_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// deleteRecordsReq is a DeleteRecords v2 of topic's partition index before
// offset, waiting up to timeout.
func deleteRecordsReq(topic string, index int32, offset int64, timeout time.Duration) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(2)
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = index, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// deleteRaw sends req to addr and returns its one partition's answer.
func deleteRaw(t *testing.T, addr string, req *kmsg.DeleteRecordsRequest) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	resp := dialRaw(t, addr).roundTrip(req).(*kmsg.DeleteRecordsResponse)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// kadmDelete deletes topic's partition 0 before offset through kadm and
// returns the low watermark it answers.
func kadmDelete(t *testing.T, c *brokertest.Cluster, topic string, offset int64) int64 {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	rs, err := kadm.NewClient(c.Client(t)).DeleteRecords(interoptest.Context(t), os)
	require.NoError(t, err)
	r, ok := rs.Lookup(topic, 0)
	require.True(t, ok, "an answer for %s/0", topic)
	require.NoError(t, r.Err, "DeleteRecords %s/0 before %d", topic, offset)
	return r.LowWatermark
}

// leaderNode waits until a running node leads topic's partition 0 in the
// metadata of every running node, and returns it.
func leaderNode(t *testing.T, c *brokertest.Cluster, topic string) *brokertest.Node {
	t.Helper()
	var leader *brokertest.Node
	require.Eventually(t, func() bool {
		leader = nil
		for _, nd := range c.Nodes {
			if nd.Server == nil {
				continue
			}
			tp, ok := nd.Server.Metadata().Topic(topic)
			if !ok || tp.Partitions[0].Leader < 0 {
				return false
			}
			l := c.Node(tp.Partitions[0].Leader)
			if l.Server == nil || (leader != nil && l != leader) {
				return false
			}
			leader = l
		}
		p, err := leader.Server.Partitions().Partition(topic, 0)
		return err == nil && p.Role().Local
	}, 30*time.Second, 5*time.Millisecond, "a running leader of %s/0", topic)
	return leader
}

// replicaStarts is the log start of topic's partition 0 on every running
// node, by node id.
func replicaStarts(t *testing.T, c *brokertest.Cluster, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for _, nd := range c.Nodes {
		if nd.Server == nil {
			continue
		}
		p, err := nd.Server.Partitions().Partition(topic, 0)
		require.NoError(t, err, "broker %d holds %s/0", nd.Config.NodeID, topic)
		out[nd.Config.NodeID] = p.StartOffset()
	}
	return out
}

// allEqual is a map of every running node's id to v.
func allEqual(c *brokertest.Cluster, v int64) map[int32]int64 {
	out := map[int32]int64{}
	for _, nd := range c.Nodes {
		if nd.Server != nil {
			out[nd.Config.NodeID] = v
		}
	}
	return out
}

// checkStartAtLeader checks what the leader of topic/0 tells clients of
// its log start: ListOffsets(earliest), Fetch below it OFFSET_OUT_OF_RANGE
// with the start in LogStartOffset, and a consumer reset to earliest
// starting there.
func checkStartAtLeader(t *testing.T, c *brokertest.Cluster, topic string, start int64) {
	t.Helper()
	leader := leaderNode(t, c, topic)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -2
	rt.Partitions = append(rt.Partitions, rp)
	lo.Topics = append(lo.Topics, rt)
	lresp := dialRaw(t, leader.Addr).roundTrip(lo).(*kmsg.ListOffsetsResponse)
	require.Zero(t, lresp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, start, lresp.Topics[0].Partitions[0].Offset, "ListOffsets(earliest) at leader %d", leader.Config.NodeID)

	if start > 0 {
		fresp := dialRaw(t, leader.Addr).roundTrip(fetchReq(topic, start-1, 0, 1)).(*kmsg.FetchResponse)
		sp := fresp.Topics[0].Partitions[0]
		assert.Equal(t, kerr.OffsetOutOfRange.Code, sp.ErrorCode, "Fetch below the log start at leader %d", leader.Config.NodeID)
		assert.Equal(t, start, sp.LogStartOffset)
	}

	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := interoptest.Context(t)
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "no record consumed")
		for _, e := range fs.Errors() {
			t.Logf("consumer: %v", e.Err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			assert.Equal(t, start, recs[0].Offset, "a consumer reset to earliest starts at the log start")
			return
		}
	}
}

// TestDeleteRecords: through kadm on an RF 3 topic, the log start moves on
// every replica before the answer comes, an offset inside a batch keeps
// the batch (the low watermark is its first offset), and the start holds
// across leader changes and restarts: ListOffsets, Fetch and a consumer at
// each new leader see it.
func TestDeleteRecords(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "d", 1, 3, nil)
	leader := leaderNode(t, c, "d")
	w := dialRaw(t, leader.Addr)
	for range 4 { // batches 0-2, 3-5, 6-8, 9-11
		resp := produceRaw(t, w, "d", -1, batchtest.Plain(t, 3))
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}

	require.Equal(t, int64(6), kadmDelete(t, c, "d", 6))
	assert.Equal(t, allEqual(c, 6), replicaStarts(t, c, "d"), "every replica moved before the answer")
	checkStartAtLeader(t, c, "d", 6)

	require.Equal(t, int64(9), kadmDelete(t, c, "d", 10), "inside the batch 9-11: it stays, the log starts at 9")
	assert.Equal(t, allEqual(c, 9), replicaStarts(t, c, "d"))
	checkStartAtLeader(t, c, "d", 9)
	require.Equal(t, int64(9), kadmDelete(t, c, "d", 3), "below the start: nothing moves")

	// Two leader changes, each old leader restarted as a follower: the
	// start is on its disk, and each new leader answers with it.
	for range 2 {
		old := leaderNode(t, c, "d")
		old.Stop(t)
		checkStartAtLeader(t, c, "d", 9)
		old.Start(t)
		assert.Equal(t, allEqual(c, 9), replicaStarts(t, c, "d"), "after broker %d restarted", old.Config.NodeID)
	}

	// The log goes on from its end; -1 deletes up to the high watermark.
	resp := produceRaw(t, dialRaw(t, leaderNode(t, c, "d").Addr), "d", -1, batchtest.Plain(t, 2))
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(12), resp.Topics[0].Partitions[0].BaseOffset)
	require.Equal(t, int64(14), kadmDelete(t, c, "d", -1))
	// The answer waits for the ISR's replicas only: a restarted broker may
	// still be catching up outside it, and takes the start from its next
	// fetch.
	assert.Eventually(t, func() bool {
		return maps.Equal(allEqual(c, 14), replicaStarts(t, c, "d"))
	}, 10*time.Second, 10*time.Millisecond, "every replica starts at 14")
}

// TestDeleteRecordsErrors: the answers a client acts on, per partition.
func TestDeleteRecordsErrors(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	c.CreateTopic(t, "e", 1, 3, nil)
	leader := leaderNode(t, c, "e")
	resp := produceRaw(t, dialRaw(t, leader.Addr), "e", -1, batchtest.Plain(t, 4))
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	var follower *brokertest.Node
	for _, nd := range c.Nodes {
		if nd != leader {
			follower = nd
		}
	}
	for _, tc := range []struct {
		name   string
		addr   string
		topic  string
		index  int32
		offset int64
		code   int16
	}{
		{"at a follower", follower.Addr, "e", 0, 2, kerr.NotLeaderForPartition.Code},
		{"above the high watermark", leader.Addr, "e", 0, 5, kerr.OffsetOutOfRange.Code},
		{"below -1", leader.Addr, "e", 0, -2, kerr.OffsetOutOfRange.Code},
		{"unknown topic", leader.Addr, "nope", 0, 0, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", leader.Addr, "e", 7, 0, kerr.UnknownTopicOrPartition.Code},
		{"internal topic", leader.Addr, "__consumer_offsets", 0, 0, kerr.InvalidTopicException.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := deleteRaw(t, tc.addr, deleteRecordsReq(tc.topic, tc.index, tc.offset, 5*time.Second))
			assert.Equal(t, tc.code, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
			assert.Equal(t, int64(-1), sp.LowWatermark)
		})
	}
	p, err := leader.Server.Partitions().Partition("e", 0)
	require.NoError(t, err)
	require.Zero(t, p.StartOffset(), "none of them moved the log start")

	t.Run("timeout 0 with the ISR already there", func(t *testing.T) {
		sp := deleteRaw(t, leader.Addr, deleteRecordsReq("e", 0, 0, 0))
		assert.Zero(t, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
		assert.Zero(t, sp.LowWatermark)
	})
	t.Run("every version", func(t *testing.T) {
		for v := int16(0); v <= 2; v++ {
			req := deleteRecordsReq("e", 0, int64(v+1), 5*time.Second)
			req.SetVersion(v)
			sp := deleteRaw(t, leader.Addr, req)
			assert.Zero(t, sp.ErrorCode, "v%d: %v", v, kerr.ErrorForCode(sp.ErrorCode))
			assert.Zero(t, sp.LowWatermark, "v%d: the one batch 0-3 stays whole", v)
		}
	})
}

// TestDeleteRecordsFollowerStopped: a follower that is down when the
// records are deleted does not hold the answer once it is out of the ISR
// (a controlled shutdown takes it out), and when it comes back it drops
// the prefix too, from its leader's log start.
func TestDeleteRecordsFollowerStopped(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "s", 1, 3, nil)
	leader := leaderNode(t, c, "s")
	w := dialRaw(t, leader.Addr)
	for range 3 {
		resp := produceRaw(t, w, "s", -1, batchtest.Plain(t, 2))
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	var follower *brokertest.Node
	for _, nd := range c.Nodes {
		if nd != leader {
			follower = nd
		}
	}
	follower.Stop(t)
	require.Eventually(t, func() bool {
		tp, _ := leader.Server.Metadata().Topic("s")
		return len(tp.Partitions[0].ISR) == 2
	}, 30*time.Second, 5*time.Millisecond, "the stopped follower leaves the ISR")

	sp := deleteRaw(t, leader.Addr, deleteRecordsReq("s", 0, 4, 10*time.Second))
	require.Zero(t, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
	require.Equal(t, int64(4), sp.LowWatermark)
	assert.Equal(t, allEqual(c, 4), replicaStarts(t, c, "s"), "the running replicas")

	follower.Start(t)
	require.Eventually(t, func() bool {
		p, err := follower.Server.Partitions().Partition("s", 0)
		return err == nil && p.StartOffset() == 4 && p.EndOffset() == 6
	}, 30*time.Second, 5*time.Millisecond, "the returning follower drops the prefix and catches up")
	require.Equal(t, int64(4), kadmDelete(t, c, "s", 4), "with the follower back in the ISR, it answers again")
}

// TestDeleteRecordsManyLeaders: kadm sends each partition to its leader;
// with the three partitions led by three brokers, each answers for its
// own, and -1 takes each partition to its own high watermark.
func TestDeleteRecordsManyLeaders(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	c.CreateTopic(t, "m", 3, 3, nil)
	ctx := interoptest.Context(t)
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	leaders := map[int32]bool{}
	tp, _ := c.Nodes[0].Server.Metadata().Topic("m")
	for i, p := range tp.Partitions {
		leaders[p.Leader] = true
		for range i + 1 { // partition i ends at i+1
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "m", Partition: int32(i), Value: []byte("v")}).FirstErr())
		}
	}
	require.Len(t, leaders, 3, "one leader per broker")
	var os kadm.Offsets
	for i := range 3 {
		os.Add(kadm.Offset{Topic: "m", Partition: int32(i), At: -1})
	}
	rs, err := kadm.NewClient(cl).DeleteRecords(ctx, os)
	require.NoError(t, err)
	for i := range int32(3) {
		r, ok := rs.Lookup("m", i)
		require.True(t, ok, "partition %d answered", i)
		require.NoError(t, r.Err, "partition %d", i)
		assert.Equal(t, int64(i+1), r.LowWatermark, "partition %d", i)
	}
}
