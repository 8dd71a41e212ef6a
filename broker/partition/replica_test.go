package partition_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
	"github.com/minikafka/minikafka/replication"
)

// pair is a leader (broker 1) and a follower (broker 2) of one partition,
// each on its own manager, wired by hand: the follower's fetches go to
// the leader's ServeFollower, the answers to HandleFetch.
type pair struct {
	t              *testing.T
	leader, follow *partition.Partition
}

func newPair(t *testing.T, eng string, sync engine.SyncPolicy) *pair {
	st := func(self int32) partition.ReplicaState {
		return partition.ReplicaState{
			Self: self, BrokerEpoch: int64(self), Lead: true, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
			MinISR: 2, Eligible: []replication.ISRMember{{ID: 1, BrokerEpoch: 1}, {ID: 2, BrokerEpoch: 2}}, Now: time.Now(),
		}
	}
	mk := func(self int32) *partition.Partition {
		m := open(t, eng, t.TempDir(), engine.Options{Sync: sync})
		p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
		require.NoError(t, err)
		_, err = p.SetState(st(self))
		require.NoError(t, err)
		return p
	}
	return &pair{t: t, leader: mk(1), follow: mk(2)}
}

// round sends the follower's fetch to the leader and its answer back, and
// reports whether the follower had a fetch to send.
func (p *pair) round() bool {
	p.t.Helper()
	fr, ok := p.follow.NextFetch()
	if !ok {
		return false
	}
	rd, err := p.leader.ServeFollower(replication.FollowerFetch{
		Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
		FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, Now: time.Now(),
	}, 1<<20)
	res := partition.FetchResult{FetchOffset: fr.FetchOffset, HighWatermark: rd.HighWatermark, LogStartOffset: rd.LogStartOffset, Diverging: rd.Diverging, Records: rd.Records}
	if err != nil {
		res.Err = err
	}
	require.NoError(p.t, p.follow.HandleFetch(res))
	return true
}

func TestReplicationThroughPartitions(t *testing.T) {
	for _, sync := range []engine.SyncPolicy{engine.SyncAlways, engine.SyncNever} {
		t.Run(sync.String(), func(t *testing.T) {
			p := newPair(t, segment.Name, sync)
			ctx := ctxT(t)
			app, err := p.leader.Append(batchtest.Plain(t, 3))
			require.NoError(t, err)
			require.Zero(t, p.leader.HighWatermark(), "min.insync.replicas 2: not committed before the follower has it")
			require.Eventually(t, func() bool {
				p.round()
				return p.follow.EndOffset() == 3
			}, 5*time.Second, time.Millisecond, "the follower appends the leader's batch")
			require.Eventually(t, func() bool {
				p.round()
				return p.leader.HighWatermark() == 3
			}, 5*time.Second, time.Millisecond, "the follower's next fetch moves the HW")
			require.NoError(t, p.leader.WaitHighWatermark(ctx, app.LastOffset+1))
			require.Eventually(t, func() bool {
				p.round()
				return p.follow.HighWatermark() == 3
			}, 5*time.Second, time.Millisecond, "the follower learns the HW")
			require.Equal(t, readAll(t, p.leader, 0), readAll(t, p.follow, 0), "identical below the HW")
			require.Equal(t, int32(0), p.follow.LeaderEpoch())
		})
	}
}
