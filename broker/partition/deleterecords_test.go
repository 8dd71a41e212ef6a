package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
	"github.com/minikafka/minikafka/replication"
)

// deleteResult is the outcome of a DeleteRecords run on its own goroutine.
type deleteResult struct {
	low int64
	err error
}

// deleteWhileReplicating runs DeleteRecords at the pair's leader while its
// follower fetches, and returns its outcome once it answers.
func (p *pair) deleteWhileReplicating(offset int64) deleteResult {
	p.t.Helper()
	done := make(chan deleteResult, 1)
	go func() {
		low, err := p.leader.DeleteRecords(ctxT(p.t), offset)
		done <- deleteResult{low, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case r := <-done:
			return r
		default:
			p.round()
		}
	}
	p.t.Fatal("DeleteRecords did not answer while the follower fetched")
	return deleteResult{}
}

// TestDeleteRecordsWaitsForTheISR: the answer waits until the follower,
// an ISR member, has the new log start too; an offset inside a batch keeps
// the batch, and the low watermark says where the log now starts.
func TestDeleteRecordsWaitsForTheISR(t *testing.T) {
	p := newPair(t, segment.Name, engine.SyncAlways)
	for range 3 {
		_, err := p.leader.Append(batchtest.Plain(t, 2)) // batches 0-1, 2-3, 4-5
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { p.round(); return p.leader.HighWatermark() == 6 }, 5*time.Second, time.Millisecond)

	// Nobody fetches: the follower never learns the new start, and the
	// request times out with the low watermark as it is.
	ctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
	defer cancel()
	low, err := p.leader.DeleteRecords(ctx, 3)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int64(0), low, "the follower still starts at 0")
	require.Equal(t, int64(2), p.leader.StartOffset(), "the batch holding 3 stays whole: the leader's log starts at 2")
	require.True(t, p.leader.FollowerDataReady(6, 0), "a parked fetch of a follower that starts at 0 is answered at once")
	require.False(t, p.leader.FollowerDataReady(6, 2), "nor one that has the start")
	require.False(t, p.leader.FollowerDataReady(6, -1), "nor one that did not say its start")

	r := p.deleteWhileReplicating(3)
	require.NoError(t, r.err)
	require.Equal(t, int64(2), r.low, "the low watermark is the kept batch's first offset")
	require.Equal(t, int64(2), p.follow.StartOffset(), "the follower dropped the same prefix")

	r = p.deleteWhileReplicating(-1)
	require.NoError(t, r.err)
	require.Equal(t, int64(6), r.low, "-1 is the high watermark")
	require.Equal(t, int64(6), p.follow.StartOffset())

	r = p.deleteWhileReplicating(4)
	require.NoError(t, r.err)
	require.Equal(t, int64(6), r.low, "below the log start: nothing to do, the start as it is")

	for _, off := range []int64{7, -2} {
		_, err := p.leader.DeleteRecords(ctxT(t), off)
		require.ErrorIs(t, err, kerr.OffsetOutOfRange, "offset %d", off)
	}
	_, err = p.follow.DeleteRecords(ctxT(t), -1)
	require.ErrorIs(t, err, kerr.NotLeaderForPartition, "at a follower")
}

// TestDeleteRecordsLeadershipLost: a DeleteRecords waiting for the ISR
// fails with NOT_LEADER_OR_FOLLOWER when this broker stops leading.
func TestDeleteRecordsLeadershipLost(t *testing.T) {
	p := newPair(t, segment.Name, engine.SyncAlways)
	_, err := p.leader.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.Eventually(t, func() bool { p.round(); return p.leader.HighWatermark() == 2 }, 5*time.Second, time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := p.leader.DeleteRecords(ctxT(t), 2)
		done <- err
	}()
	require.Eventually(t, func() bool { return p.leader.StartOffset() == 2 }, 5*time.Second, time.Millisecond)
	_, err = p.leader.SetState(partition.ReplicaState{
		Self: 1, BrokerEpoch: 1, Lead: true, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1,
		Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 2,
		Eligible: []replication.ISRMember{{ID: 1, BrokerEpoch: 1}, {ID: 2, BrokerEpoch: 2}}, Now: time.Now(),
	})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.ErrorIs(t, err, kerr.NotLeaderForPartition)
	case <-time.After(10 * time.Second):
		t.Fatal("DeleteRecords kept waiting after the leadership ended")
	}
}
