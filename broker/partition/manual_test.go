package partition_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/segment"
	"github.com/minikafka/minikafka/replication"
)

// Tests of Config.Manual: the caller (the simulator) does what the
// background loops do, on its own goroutine and its own clock.

func openManual(t *testing.T, fs vfs.FS, clk clock.Clock) *partition.Manager {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{Dir: "/data", Engine: segment.Name, Manual: true, Clock: clk,
		EngineOptions: engine.Options{FS: fs, Sync: engine.SyncAlways}})
	require.NoError(t, err)
	return m
}

// TestManualTickSavesHighWatermark: Manager.Tick writes the high watermark
// checkpoints every hwCheckpointEvery, as the tick loop does, so that a
// replica restarted after a power loss starts from a recent high watermark
// in Manual mode too.
func TestManualTickSavesHighWatermark(t *testing.T) {
	mem := vfs.NewCrashableMem()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, mem, clk)
	p := onePartition(t, m, "t")
	_, err := p.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.True(t, p.Sync())
	require.Equal(t, int64(2), p.HighWatermark())

	m.Tick(clk.Now().Add(time.Second))
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	m2 := openManual(t, crashed, clk)
	p2, err := m2.Partition("t", 0)
	require.NoError(t, err)
	require.Zero(t, p2.HighWatermark(), "no checkpoint within the first interval")
	require.NoError(t, m2.Close())

	m.Tick(clk.Now().Add(3 * time.Second))
	crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	m3 := openManual(t, crashed, clk)
	defer m3.Close()
	p3, err := m3.Partition("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), p3.HighWatermark(), "the tick wrote the checkpoint")
	require.NoError(t, m.Close())
}

// TestHighWatermarkCheckpointIsOneFile: the high watermarks of every
// partition go to one checkpoint, one file synced per interval however
// many partitions moved (a file each cost a broker thousands of syncs
// every interval), and a restart after a power loss starts each partition
// from its own.
func TestHighWatermarkCheckpointIsOneFile(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var syncs atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData {
			syncs.Add(1)
		}
		return nil
	}))
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, fs, clk)
	const n = 20
	createTopic(t, m, "t", n, nil)
	for i := range int32(n) {
		p, err := m.Partition("t", i)
		require.NoError(t, err)
		for range i + 1 {
			_, err := p.Append(batchtest.Plain(t, 1))
			require.NoError(t, err)
		}
		require.True(t, p.Sync())
	}
	before := syncs.Load()
	m.Tick(clk.Now().Add(3 * time.Second))
	require.LessOrEqual(t, syncs.Load()-before, int64(2), "one file and its directory")

	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	m2 := openManual(t, crashed, clk)
	defer m2.Close()
	for i := range int32(n) {
		p, err := m2.Partition("t", i)
		require.NoError(t, err)
		require.Equal(t, int64(i+1), p.HighWatermark(), "partition %d", i)
	}
	require.NoError(t, m.Close())
}

// TestManualAcks: a produce's AckWait says without blocking what
// WaitDurable and WaitHighWatermark would return: not yet before the sync
// the partition asked for, done after it, and NOT_LEADER_OR_FOLLOWER once
// the leadership it was appended under ended, even if a later one's high
// watermark passes it.
func TestManualAcks(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, vfs.NewMem(), clk)
	defer m.Close()
	p := onePartition(t, m, "t")
	require.False(t, p.SyncWanted())
	app, err := p.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.True(t, p.SyncWanted(), "the append asks for a sync")
	require.False(t, p.SyncWanted(), "once")
	one, all := p.AwaitAck(1, app.LastOffset+1), p.AwaitAck(-1, app.LastOffset+1)
	for _, w := range []partition.AckWait{one, all} {
		done, err := w.Poll()
		require.False(t, done)
		require.NoError(t, err)
	}
	bs, err := p.ReadLog(0, 1<<20)
	require.NoError(t, err)
	require.Len(t, bs, 1, "ReadLog reads above the high watermark")
	rd, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	require.Empty(t, rd.Records, "Read does not")

	require.True(t, p.Sync())
	require.Equal(t, int64(2), p.DurableEnd())
	for _, w := range []partition.AckWait{one, all} {
		done, err := w.Poll()
		require.True(t, done)
		require.NoError(t, err)
	}

	app, err = p.Append(batchtest.Plain(t, 1))
	require.NoError(t, err)
	w := p.AwaitAck(-1, app.LastOffset+1)
	st := partition.ReplicaState{Self: 1, BrokerEpoch: 1, Lead: true, Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1, Now: clk.Now()}
	_, err = p.SetState(st)
	require.NoError(t, err)
	require.True(t, p.Sync())
	require.Equal(t, int64(3), p.HighWatermark(), "the next leadership commits the batch")
	done, err := w.Poll()
	require.True(t, done)
	require.ErrorIs(t, err, kerr.NotLeaderForPartition, "but the wait was the ended leadership's")
}

// TestManualFollowerData: FollowerDataReady says when a parked follower
// fetch has something, and a WatchFollowerData channel hears of every
// change that may make it so; the Configure hooks see each state machine's
// configuration.
func TestManualFollowerData(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var leaders, followers int
	m, err := partition.OpenManager(partition.Config{Dir: "/data", Engine: segment.Name, Manual: true, Clock: clk,
		EngineOptions: engine.Options{FS: vfs.NewMem(), Sync: engine.SyncAlways},
		Replication: partition.Replication{
			ConfigureLeader:   func(*replication.LeaderConfig) { leaders++ },
			ConfigureFollower: func(*replication.FollowerConfig) { followers++ },
		}})
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
	require.NoError(t, err)
	st := partition.ReplicaState{Self: 1, BrokerEpoch: 1, Lead: true, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1, Now: clk.Now()}
	_, err = p.SetState(st)
	require.NoError(t, err)
	woke := make(chan struct{}, 1)
	heard := func() bool {
		select {
		case <-woke:
			return true
		default:
			return false
		}
	}
	stop := p.WatchFollowerData(woke)
	require.False(t, p.FollowerDataReady(0, -1))
	_, err = p.Append(batchtest.Plain(t, 1))
	require.NoError(t, err)
	require.True(t, heard(), "the log end moved")
	require.True(t, p.FollowerDataReady(0, -1), "before it is durable: the leader's fsync and the follower's copy overlap")
	require.False(t, p.FollowerDataReady(1, -1))
	require.True(t, p.Sync())
	require.False(t, heard(), "the durable end moving is not news for a follower")
	st.Leader, st.LeaderEpoch = 2, 1
	_, err = p.SetState(st)
	require.NoError(t, err)
	require.True(t, heard(), "the role changed")
	require.True(t, p.FollowerDataReady(1, -1), "a follower of a former leader is answered at once")
	fs, ok := p.FollowerState()
	require.True(t, ok)
	require.Equal(t, int32(2), fs.Leader)
	require.Equal(t, []int{1, 1}, []int{leaders, followers})
	stop()
	st.Leader, st.LeaderEpoch = 1, 2
	_, err = p.SetState(st)
	require.NoError(t, err)
	require.False(t, heard(), "not once the watch stopped")
}

// TestFollowerTakesNewBrokerEpoch: a follower built before its broker
// registered (broker epoch 0, as the reconciler gives it then) fetches
// with the epoch the broker registered with as soon as the metadata says
// so, though the leader and its epoch stay the same: with the old one the
// leader never takes it back into the ISR (found by the simulator: a
// broker restarted after a controlled shutdown stayed out of the ISR).
func TestFollowerTakesNewBrokerEpoch(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, vfs.NewMem(), clk)
	defer m.Close()
	p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
	require.NoError(t, err)
	st := partition.ReplicaState{Self: 2, BrokerEpoch: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1, Now: clk.Now()}
	_, err = p.SetState(st)
	require.NoError(t, err)
	fr, ok := p.NextFetch()
	require.True(t, ok)
	require.Zero(t, fr.BrokerEpoch)

	st.BrokerEpoch, st.Lead = 20, true
	changed, err := p.SetState(st)
	require.NoError(t, err)
	require.True(t, changed, "a new broker epoch is a new role")
	fr, ok = p.NextFetch()
	require.True(t, ok)
	require.Equal(t, int64(20), fr.BrokerEpoch)
	require.Equal(t, int32(3), fr.CurrentLeaderEpoch)
}

// TestFollowerResyncsAfterFailedAppend: a follower whose append of fetched
// batches fails (a full disk) fetches them again from its log end once
// the disk takes them: the Follower that counted them is rebuilt from the
// log. It waited for good for a sync of batches that were never stored
// (found by the simulator: a follower on a full disk never rejoined the
// ISR).
func TestFollowerResyncsAfterFailedAppend(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := func(self int32) partition.ReplicaState {
		return partition.ReplicaState{Self: self, BrokerEpoch: int64(self), Lead: true, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
			MinISR: 1, Eligible: []replication.ISRMember{{ID: 1, BrokerEpoch: 1}, {ID: 2, BrokerEpoch: 2}}, Now: clk.Now()}
	}
	mk := func(self int32, eng, dir string) *partition.Partition {
		m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, Manual: true, Clock: clk,
			EngineOptions: engine.Options{Sync: engine.SyncAlways}})
		require.NoError(t, err)
		t.Cleanup(func() { m.Close() })
		p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
		require.NoError(t, err)
		_, err = p.SetState(st(self))
		require.NoError(t, err)
		return p
	}
	followerDir := t.TempDir()
	leader, follower := mk(1, segment.Name, t.TempDir()), mk(2, flakyName, followerDir)
	round := func() error {
		fr, ok := follower.NextFetch()
		require.True(t, ok, "the follower has a fetch to send")
		rd, err := leader.ServeFollower(replication.FollowerFetch{Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
			FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, Now: clk.Now()}, 1<<20)
		require.NoError(t, err)
		return follower.HandleFetch(partition.FetchResult{Request: fr, HighWatermark: rd.HighWatermark,
			LogStartOffset: rd.LogStartOffset, Records: rd.Records})
	}
	_, err := leader.Append(batchtest.Plain(t, 2))
	require.NoError(t, err)
	require.True(t, leader.Sync())

	f := flakyOf(followerDir, follower)
	f.set(func(f *flakyEngine) { f.failAppend = true })
	require.ErrorIs(t, round(), kerr.KafkaStorageError)
	require.Zero(t, follower.EndOffset())
	fs, ok := follower.FollowerState()
	require.True(t, ok)
	require.Zero(t, fs.LogEnd, "the follower knows its log kept nothing")

	f.set(func(f *flakyEngine) { f.failAppend = false })
	require.NoError(t, round())
	require.Equal(t, int64(2), follower.EndOffset())
	require.True(t, follower.Sync())
	require.NoError(t, round())
	require.Equal(t, int64(2), leader.HighWatermark(), "the follower's next fetch commits the batch")
}

// TestStaleFetchAnswerIsDropped: an answer to a fetch of an earlier role
// (here FENCED_LEADER_EPOCH: the old fetch carried leader epoch 3 to a
// leader already at 4) does not reach the follower of the new one, which
// would take itself for stale and wait for metadata that never comes
// (found by the simulator: a follower stayed out of the ISR for good).
func TestStaleFetchAnswerIsDropped(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := openManual(t, vfs.NewMem(), clk)
	defer m.Close()
	p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
	require.NoError(t, err)
	st := partition.ReplicaState{Self: 2, BrokerEpoch: 2, Lead: true, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1, Now: clk.Now()}
	_, err = p.SetState(st)
	require.NoError(t, err)
	old, ok := p.NextFetch()
	require.True(t, ok)
	st.LeaderEpoch = 4
	_, err = p.SetState(st)
	require.NoError(t, err)

	require.NoError(t, p.HandleFetch(partition.FetchResult{Request: old, Err: kerr.FencedLeaderEpoch}))
	fr, ok := p.NextFetch()
	require.True(t, ok, "the new role still fetches")
	require.Equal(t, int32(4), fr.CurrentLeaderEpoch)

	err = p.HandleFetch(partition.FetchResult{Request: fr, Err: kerr.FencedLeaderEpoch})
	require.True(t, partition.IsNeedMetadata(err), "an answer to its own fetch counts: %v", err)
	_, ok = p.NextFetch()
	require.False(t, ok)
}

// TestFollowerStartPastItsUnsyncedTail: a follower that learns, from a
// fetch, a leader's log start past batches it appended and has not synced
// moves its own start there, and its durable end with it: the start is
// durable and nothing below it is left to sync. Left below the start, the
// durable end broke the order every role is built on (start <= durable
// end <= end), and the partition's next role change failed ("log start 10,
// durable end 8, end 10 out of order"; the simulator, seed 7332 on the
// segment engine).
func TestFollowerStartPastItsUnsyncedTail(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := func(self, leader int32, epoch int32, isr []int32) partition.ReplicaState {
		return partition.ReplicaState{Self: self, BrokerEpoch: int64(self), Lead: true, Leader: leader, LeaderEpoch: epoch,
			Replicas: []int32{1, 2}, ISR: isr, MinISR: 1, Now: clk.Now(),
			Eligible: []replication.ISRMember{{ID: 1, BrokerEpoch: 1}, {ID: 2, BrokerEpoch: 2}}}
	}
	ensure := func(m *partition.Manager) *partition.Partition {
		p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: topicID("t")})
		require.NoError(t, err)
		return p
	}
	leader := ensure(openManual(t, vfs.NewMem(), clk))
	follower := ensure(openManual(t, vfs.NewMem(), clk))
	_, err := leader.SetState(st(1, 1, 0, []int32{1}))
	require.NoError(t, err)
	_, err = follower.SetState(st(2, 1, 0, []int32{1}))
	require.NoError(t, err)
	for range 3 {
		_, err := leader.Append(batchtest.Plain(t, 2))
		require.NoError(t, err)
	}
	require.True(t, leader.Sync())
	require.Equal(t, int64(6), leader.HighWatermark())

	// The leader's start moves between reading the records it serves and
	// the answer (DeleteRecords on another goroutine; a parked fetch
	// answered later): the follower gets batches below the start it is told.
	fr, ok := follower.NextFetch()
	require.True(t, ok)
	rd, err := leader.ServeFollower(replication.FollowerFetch{Replica: 2, BrokerEpoch: 2, CurrentLeaderEpoch: fr.CurrentLeaderEpoch,
		FetchOffset: fr.FetchOffset, LastFetchedEpoch: fr.LastFetchedEpoch, LogStartOffset: fr.LogStartOffset, Now: clk.Now()}, 1<<20)
	require.NoError(t, err)
	_, err = leader.DeleteBefore(4)
	require.NoError(t, err)
	require.NoError(t, follower.HandleFetch(partition.FetchResult{Request: fr, HighWatermark: rd.HighWatermark,
		LogStartOffset: leader.StartOffset(), Records: rd.Records}))
	require.Equal(t, int64(6), follower.EndOffset())
	require.Equal(t, int64(4), follower.StartOffset(), "the follower moved its start to its leader's")
	require.GreaterOrEqual(t, follower.DurableEnd(), follower.StartOffset(), "contract: log start <= durable end, though nothing was synced")
	_, err = follower.SetState(st(2, 2, 1, []int32{2}))
	require.NoError(t, err, "the follower takes its next role")
}
