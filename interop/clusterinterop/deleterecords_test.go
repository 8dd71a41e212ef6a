package clusterinterop

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/harness"
)

// TestDeleteRecordsWaitsForAFrozenFollower is Kafka's DeleteRecords
// purgatory against a follower that stops answering without leaving
// (SIGSTOP: its connections stay open): the leader moves its own log
// start at once, but the answer waits for the ISR, so a short
// TimeoutMillis gets REQUEST_TIMED_OUT with the low watermark still at
// the frozen follower's start; a long one is answered once the follower is
// fenced and leaves the ISR. Thawed, the follower takes the new start:
// DeleteRecords with it back in the ISR answers again.
func TestDeleteRecordsWaitsForAFrozenFollower(t *testing.T) {
	c := startCluster(t, 3, "segment", "-broker-session-timeout", "6s")
	c.createTopic("dr", 1, 3, nil)
	c.waitISR("dr", 3, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.client(kgo.DefaultProduceTopic("dr"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for range 10 { // one batch per record: offsets 0-9
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
	}

	td := c.waitLeaders("dr", 30*time.Second)
	leader := c.Node(td.Partitions[0].Leader)
	ctl, err := c.controller(ctx)
	require.NoError(t, err)
	victim := c.Node(c.Others(leader.ID, int32(ctl))[0]) // a follower, not the active controller
	d, err := harness.Dial(leader.Addr)
	require.NoError(t, err)
	defer d.Close()

	pid := victim.Child().Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
		}
	}
	t.Cleanup(thaw)

	sp := deleteAt(ctx, t, d, 4, 500*time.Millisecond)
	assert.Equal(t, kerr.RequestTimedOut.Code, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
	assert.Equal(t, int64(0), sp.LowWatermark, "the frozen follower still starts at 0")
	assert.Equal(t, int64(4), earliestAt(ctx, t, d), "the leader moved its log start all the same")

	asked := time.Now()
	sp = deleteAt(ctx, t, d, 6, time.Minute)
	require.Zero(t, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
	assert.Equal(t, int64(6), sp.LowWatermark)
	t.Logf("DeleteRecords answered %v after it was sent, once broker %d left the ISR", time.Since(asked).Round(time.Millisecond), victim.ID)
	md, err := d.Metadata(ctx, "dr")
	require.NoError(t, err)
	assert.NotContains(t, md.Topics[0].Partitions[0].ISR, victim.ID, "answered only once the frozen follower was out of the ISR")

	thaw()
	require.Eventually(t, func() bool {
		md, err := d.Metadata(ctx, "dr")
		return err == nil && slices.Contains(md.Topics[0].Partitions[0].ISR, victim.ID)
	}, time.Minute, 20*time.Millisecond, "broker %d back in the ISR", victim.ID)
	sp = deleteAt(ctx, t, d, 6, 30*time.Second)
	require.Zero(t, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
	assert.Equal(t, int64(6), sp.LowWatermark, "the thawed follower, in the ISR again, starts at 6 too")
}

// deleteAt sends DeleteRecords of dr/0 before offset to d, waiting up to
// timeout, and returns the partition's answer.
func deleteAt(ctx context.Context, t *testing.T, d *harness.Direct, offset int64, timeout time.Duration) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "dr"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := d.Request(ctx, req)
	require.NoError(t, err)
	r := resp.(*kmsg.DeleteRecordsResponse)
	require.Len(t, r.Topics, 1)
	require.Len(t, r.Topics[0].Partitions, 1)
	return r.Topics[0].Partitions[0]
}

// earliestAt is ListOffsets(earliest) of dr/0 at d.
func earliestAt(ctx context.Context, t *testing.T, d *harness.Direct) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "dr"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := d.Request(ctx, req)
	require.NoError(t, err)
	sp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	require.Zero(t, sp.ErrorCode, "got %v", kerr.ErrorForCode(sp.ErrorCode))
	return sp.Offset
}
