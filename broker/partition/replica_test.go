package partition_test

import (
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
		FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, LogStartOffset: fr.LogStartOffset, Now: time.Now(),
	}, 1<<20)
	res := partition.FetchResult{Request: fr, HighWatermark: rd.HighWatermark, LogStartOffset: rd.LogStartOffset, Diverging: rd.Diverging, Records: rd.Records}
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

// TestDivergedFollowerTruncatesAndLeads: a replica that led an epoch of its
// own and appended what nobody else has (a leader cut off) truncates that
// suffix when it follows the new leader (a diverging epoch, KIP-320), and
// can lead afterwards: its log, durable end and epochs agree again.
func TestDivergedFollowerTruncatesAndLeads(t *testing.T) {
	p := newPair(t, segment.Name, engine.SyncAlways)
	ctx := ctxT(t)
	app, err := p.leader.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.Eventually(t, func() bool { p.round(); return p.leader.HighWatermark() == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.leader.WaitHighWatermark(ctx, app.LastOffset+1))

	state := func(self, leader, epoch int32) partition.ReplicaState {
		return partition.ReplicaState{
			Self: self, BrokerEpoch: int64(self), Lead: true, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch,
			Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1,
			Eligible: []replication.ISRMember{{ID: 1, BrokerEpoch: 1}, {ID: 2, BrokerEpoch: 2}}, Now: time.Now(),
		}
	}
	// Broker 2 leads epoch 1 alone for a while and appends 3 records that
	// broker 1 never sees.
	_, err = p.follow.SetState(state(2, 2, 1))
	require.NoError(t, err)
	_, err = p.follow.Append(batchtest.Plain(t, 3))
	require.NoError(t, err)
	require.NoError(t, p.follow.WaitDurable(ctx, 5))
	// Broker 1 leads epoch 2; broker 2 follows it and truncates to 2.
	_, err = p.leader.SetState(state(1, 1, 2))
	require.NoError(t, err)
	_, err = p.follow.SetState(state(2, 1, 2))
	require.NoError(t, err)
	require.Eventually(t, func() bool { p.round(); return p.follow.EndOffset() == 2 }, 5*time.Second, time.Millisecond,
		"the follower truncates the suffix the leader never had")
	// And broker 2 can lead epoch 3.
	_, err = p.follow.SetState(state(2, 2, 3))
	require.NoError(t, err, "lead after a truncation")
	require.True(t, p.follow.Role().Local)
	_, err = p.follow.Append(batchtest.Plain(t, 1))
	require.NoError(t, err)
	require.Equal(t, int64(3), p.follow.EndOffset())
}

// TestManualManager: a manager opened with Manual starts no goroutine; a
// leader's high watermark moves when the caller syncs, as the simulator
// drives it.
func TestManualManager(t *testing.T) {
	m, err := partition.OpenManager(partition.Config{Dir: t.TempDir(), Engine: segment.Name, Manual: true,
		EngineOptions: engine.Options{Sync: engine.SyncAlways}})
	require.NoError(t, err)
	defer m.Close()
	p := onePartition(t, m, "t")
	_, err = p.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.Zero(t, p.HighWatermark(), "nothing synced yet: nobody syncs but the caller")
	require.True(t, p.Sync())
	require.Equal(t, int64(2), p.HighWatermark())
	m.Tick(time.Now())
}

// TestFollowerRefusesACorruptBatch: a fetched batch that fails its CRC is
// refused, never stored; the next fetch asks for the same offset again.
func TestFollowerRefusesACorruptBatch(t *testing.T) {
	p := newPair(t, segment.Name, engine.SyncAlways)
	_, err := p.leader.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.Eventually(t, func() bool { p.leader.Sync(); return p.leader.EndOffset() == 2 }, 5*time.Second, time.Millisecond)
	fr, ok := p.follow.NextFetch()
	require.True(t, ok)
	rd, err := p.leader.ServeFollower(replication.FollowerFetch{
		Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
		FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, Now: time.Now(),
	}, 1<<20)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		if len(rd.Records) > 0 {
			return true
		}
		rd, err = p.leader.ServeFollower(replication.FollowerFetch{Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
			FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, Now: time.Now()}, 1<<20)
		return err == nil && len(rd.Records) > 0
	}, 5*time.Second, time.Millisecond)
	bad := append([]byte(nil), rd.Records...)
	bad[len(bad)-1] ^= 0xff // a record byte: the CRC no longer matches
	err = p.follow.HandleFetch(partition.FetchResult{Request: fr, HighWatermark: rd.HighWatermark, Records: bad})
	require.True(t, err == nil || partition.IsBackoff(err), "refused: %v", err)
	require.Zero(t, p.follow.EndOffset(), "nothing stored")
	again, ok := p.follow.NextFetch()
	require.True(t, ok)
	require.Equal(t, fr.FetchOffset, again.FetchOffset, "the same offset is fetched again")
	require.NoError(t, p.follow.HandleFetch(partition.FetchResult{Request: again, HighWatermark: rd.HighWatermark, Records: rd.Records}))
	require.Equal(t, int64(2), p.follow.EndOffset(), "the good copy is stored")
}

// TestFollowerBehindTheLogStartResets: a leader whose log start moved past
// what a follower has (DeleteRecords) answers its fetch OFFSET_OUT_OF_RANGE
// with the new start, and the follower starts over there and catches up;
// before the leader's replication state knew of the move, it read below its
// log's start and the follower backed off for good.
func TestFollowerBehindTheLogStartResets(t *testing.T) {
	p := newPair(t, segment.Name, engine.SyncAlways)
	for range 3 {
		_, err := p.leader.Append(batchtest.Plain(t, 2))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		p.round()
		return p.leader.HighWatermark() == 6
	}, 5*time.Second, time.Millisecond)
	// The follower falls behind: a new leader's log start passes its end.
	p2 := newPair(t, segment.Name, engine.SyncAlways)
	p.follow = p2.follow
	_, err := p.leader.DeleteBefore(4)
	require.NoError(t, err)
	fr, ok := p.follow.NextFetch()
	require.True(t, ok)
	_, err = p.leader.ServeFollower(replication.FollowerFetch{
		Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
		FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, Now: time.Now(),
	}, 1<<20)
	require.ErrorIs(t, err, kerr.OffsetOutOfRange)
	require.Eventually(t, func() bool {
		p.round()
		return p.follow.StartOffset() == 4 && p.follow.EndOffset() == 6
	}, 5*time.Second, time.Millisecond, "the follower restarts at the leader's log start and catches up")
	require.Equal(t, readAll(t, p.leader, 4), readAll(t, p.follow, 4))
}
