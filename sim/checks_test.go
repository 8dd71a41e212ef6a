package sim

import (
	"hash/fnv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// Each checker is fed a history with the anomaly it names and must report
// it, and one without it and must not.

func testSim() *Sim {
	s := &Sim{trace: fnv.New64a(), stats: Stats{Faults: map[string]int{}}}
	s.checks = newChecks(s)
	return s
}

// reported is the anomaly of s's first violation, "" for none.
func reported(s *Sim) string {
	if len(s.checks.violations) == 0 {
		return ""
	}
	return s.checks.violations[0].Anomaly
}

// memLog is a log of stored batches, one record each by default.
type memLog struct{ batches []engine.Batch }

func (l *memLog) StartOffset() int64 {
	if len(l.batches) == 0 {
		return 0
	}
	return l.batches[0].BaseOffset
}

func (l *memLog) EndOffset() int64 {
	if len(l.batches) == 0 {
		return 0
	}
	return l.batches[len(l.batches)-1].NextOffset()
}

func (l *memLog) ReadLog(offset int64, maxBytes int) ([]engine.Batch, error) {
	for i, b := range l.batches {
		if b.NextOffset() > offset {
			return engine.CopyBatches(l.batches, i, maxBytes), nil
		}
	}
	return nil, nil
}

// logOf stores one batch per value, from offset 0.
func logOf(t *testing.T, values ...string) *memLog {
	l := &memLog{}
	for i, v := range values {
		data, err := batchtest.Build(batchtest.Spec{Values: [][]byte{[]byte(v)}})
		require.NoError(t, err)
		batch.SetBaseOffset(data, int64(i))
		l.batches = append(l.batches, engine.Batch{BaseOffset: int64(i), Records: 1, Data: data})
	}
	return l
}

var k1 = tp{topic: uuid.UUID{1}, part: 0}

func recs(offsets ...int64) []batchtest.Record {
	var out []batchtest.Record
	for _, o := range offsets {
		out = append(out, batchtest.Record{Offset: o, Value: []byte{byte(o)}})
	}
	return out
}

func TestCheckLostWrite(t *testing.T) {
	s := testSim()
	s.checks.lost.acked(s, 101, k1, 1, 2, [][]byte{[]byte("b")}, nil)
	s.checks.lost.elected(s, view{broker: 1, tp: k1, epoch: 2, log: logOf(t, "a", "b")})
	require.Empty(t, reported(s))
	s.checks.lost.elected(s, view{broker: 1, tp: k1, epoch: 1, log: logOf(t, "a")})
	require.Empty(t, reported(s), "a leader of an epoch before the acknowledgement need not have it")
	s.checks.lost.elected(s, view{broker: 2, tp: k1, epoch: 3, log: logOf(t, "a", "x")})
	require.Equal(t, "lost-write", reported(s))

	// Under sync=never: lost with every copy unsynced is excused, kept by
	// one synced copy is not.
	s = testSim()
	k2 := tp{topic: uuid.UUID{2}}
	s.checks.lost.acked(s, 101, k1, 1, 2, [][]byte{[]byte("b")}, []int32{1, 2})
	s.checks.lost.acked(s, 101, k2, 1, 2, [][]byte{[]byte("b")}, []int32{1, 2})
	unsynced := func(tp, int64, int64, []byte) bool { return false }
	syncedK2 := func(k tp, _, _ int64, _ []byte) bool { return k == k2 }
	require.Empty(t, s.checks.lost.powerLoss(s, 1, unsynced), "broker 2 still has them")
	require.Equal(t, map[tp]int64{k1: 1}, s.checks.lost.powerLoss(s, 2, syncedK2))
	s.checks.lost.elected(s, view{broker: 3, tp: k1, epoch: 3, log: logOf(t, "a")})
	require.Empty(t, reported(s), "excused")
	s.checks.lost.elected(s, view{broker: 3, tp: k2, epoch: 3, log: logOf(t, "a")})
	require.Equal(t, "lost-write", reported(s), "broker 2 had synced it")
}

// TestDurableCopyByValue: a synced copy counts only if it holds the
// acknowledged records, not other records at their offsets (a log
// truncated and written again).
func TestDurableCopyByValue(t *testing.T) {
	s := testSim()
	l := durableLog{log: logOf(t, "a", "b"), synced: 2}
	assert.True(t, l.holds(s, 1, k1, 1, 2, []byte("b")))
	assert.False(t, l.holds(s, 1, k1, 1, 2, []byte("x")), "other records at the same offsets")
	assert.False(t, durableLog{log: logOf(t, "a", "b"), synced: 1}.holds(s, 1, k1, 1, 2, []byte("b")), "held, but not yet synced")
	assert.False(t, l.holds(s, 1, k1, 2, 3, []byte("c")), "past the log's end")
}

func TestCheckDuplicate(t *testing.T) {
	s := testSim()
	s.checks.dups.log(s, view{broker: 1, tp: k1, log: logOf(t, "a", "b")})
	require.Empty(t, reported(s))
	s.checks.dups.log(s, view{broker: 1, tp: k1, log: logOf(t, "a", "b", "a")})
	require.Equal(t, "duplicate", reported(s))

	s = testSim()
	wasLost := s.checks.offsets.wasLost
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 0, Value: []byte("a")}, {Offset: 3, Value: []byte("a")}}, wasLost)
	require.Equal(t, "duplicate", reported(s))

	// A replica reset to start at 2 lost the producer state of what lay
	// below: a copy below 2 and one above are excused, two above it are not.
	s = testSim()
	s.checks.dups.stateDropped(k1, 2)
	wasLost = s.checks.offsets.wasLost
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 1, Value: []byte("a")}, {Offset: 3, Value: []byte("a")}}, wasLost)
	require.Empty(t, reported(s))
	require.Equal(t, 1, s.stats.Faults["duplicate-after-log-reset"])
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 4, Value: []byte("b")}, {Offset: 5, Value: []byte("b")}}, wasLost)
	require.Equal(t, "duplicate", reported(s))

	// The history of k1 from 1 lost with every copy unsynced (sync=never):
	// "c", committed at 1, stored again at 4 by its retry, is excused; "a",
	// at 0, was not lost, and a second copy of it is a duplicate.
	s = testSim()
	wasLost = s.checks.offsets.wasLost
	s.checks.offsets.committed(s, view{broker: 1, tp: k1, log: logOf(t, "a", "c")}, 0, 2)
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 0, Value: []byte("a")}, {Offset: 1, Value: []byte("c")}}, wasLost)
	s.checks.offsets.forget(k1, 1)
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 4, Value: []byte("c")}}, wasLost)
	require.Empty(t, reported(s))
	require.Equal(t, 1, s.stats.Faults["duplicate-of-lost-unsynced"])
	s.checks.dups.read(s, k1, []batchtest.Record{{Offset: 5, Value: []byte("a")}}, wasLost)
	require.Equal(t, "duplicate", reported(s))
}

func TestCheckInconsistentOffsets(t *testing.T) {
	s := testSim()
	s.checks.offsets.committed(s, view{broker: 1, tp: k1, log: logOf(t, "a", "b")}, 0, 2)
	s.checks.offsets.committed(s, view{broker: 2, tp: k1, log: logOf(t, "a", "b")}, 0, 2)
	require.Empty(t, reported(s))
	s.checks.offsets.committed(s, view{broker: 3, tp: k1, log: logOf(t, "a", "c")}, 0, 2)
	require.Equal(t, "inconsistent-offsets", reported(s), "replicas differ below the high watermark")

	s = testSim()
	s.checks.offsets.committed(s, view{broker: 1, tp: k1, log: logOf(t, "a")}, 0, 1)
	s.checks.offsets.read(s, &consumerClient{id: 200}, k1, []batchtest.Record{{Offset: 0, Value: []byte("z")}})
	require.Equal(t, "inconsistent-offsets", reported(s), "a consumer read what was not committed there")
}

func TestCheckNonmonotonicPoll(t *testing.T) {
	s := testSim()
	s.checks.polls.polled(s, 200, k1, 0, [][]batchtest.Record{recs(0, 1), recs(2)})
	s.checks.polls.polled(s, 200, k1, 3, [][]batchtest.Record{recs(2, 3, 4)})
	require.Empty(t, reported(s), "the first batch may begin below the position it holds")
	s.checks.polls.polled(s, 200, k1, 5, [][]batchtest.Record{recs(5), recs(3)})
	require.Equal(t, "nonmonotonic-poll", reported(s), "disorder inside one answer")

	s = testSim()
	s.checks.polls.polled(s, 200, k1, 0, [][]batchtest.Record{recs(0, 1, 2)})
	s.checks.polls.polled(s, 200, k1, 3, [][]batchtest.Record{recs(0, 1)})
	require.Equal(t, "nonmonotonic-poll", reported(s), "a later poll given what came before, in a batch that does not hold its position")
}

func TestCheckPollSkip(t *testing.T) {
	s := testSim()
	s.checks.skips.polled(s, 200, k1, 1, recs(0, 1, 2))
	require.Empty(t, reported(s))
	s.checks.skips.polled(s, 200, k1, 3, recs(5))
	require.Equal(t, "poll-skip", reported(s))
}

func TestCheckTwoLeaders(t *testing.T) {
	s := testSim()
	s.checks.leaders.elected(s, view{broker: 1, tp: k1}, 3)
	s.checks.leaders.elected(s, view{broker: 1, tp: k1}, 3)
	require.Empty(t, reported(s))
	s.checks.leaders.elected(s, view{broker: 2, tp: k1}, 3)
	require.Equal(t, "two-leaders", reported(s))

	s = testSim()
	img := imageWith(t, 1, cluster.Partition{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	s.checks.leaders.image(s, &broker{id: 1}, img)
	img2 := imageWith(t, 1, cluster.Partition{Leader: 2, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	s.checks.leaders.image(s, &broker{id: 2}, img2)
	require.Equal(t, "two-leaders", reported(s), "two images name two leaders of one epoch")
}

func TestCheckRoleRegression(t *testing.T) {
	s := testSim()
	s.checks.leaders.role(s, 1, k1, 4, false)
	s.checks.leaders.role(s, 1, k1, 2, false)
	require.Empty(t, reported(s), "a restarted follower may replay older images")
	s.checks.leaders.role(s, 1, k1, 3, true)
	require.Equal(t, "epoch-regression", reported(s), "leading below an epoch it held")
}

// imageWith is an image at offset of one topic "t" with partition p.
func imageWith(t *testing.T, offset uint64, p cluster.Partition) *cluster.Metadata {
	t.Helper()
	store := cluster.NewStore()
	for i := uint64(1); i <= offset; i++ {
		recs := []cluster.Record{{Barrier: &cluster.Barrier{}}}
		if i == 1 {
			recs = []cluster.Record{{Bootstrap: &cluster.Bootstrap{ClusterID: "c"}}, {CreateTopic: &cluster.CreateTopic{Name: "t", ID: k1.topic, Partitions: []cluster.Partition{p}}}}
		}
		b, err := cluster.EncodeBatch(recs)
		require.NoError(t, err)
		require.NoError(t, store.Apply(i, b))
		require.NoError(t, store.Refusal(i))
	}
	return store.Image()
}

func TestCheckMetadata(t *testing.T) {
	p := func(le, pe int32) cluster.Partition {
		return cluster.Partition{Leader: 1, LeaderEpoch: le, PartitionEpoch: pe, Replicas: []int32{1}, ISR: []int32{1}}
	}
	s := testSim()
	s.checks.epochs.image(s, 1, 1, imageWith(t, 2, p(1, 1)))
	s.checks.epochs.image(s, 1, 1, imageWith(t, 1, p(1, 1)))
	require.Equal(t, "metadata-regression", reported(s), "an incarnation applies an older offset")

	s = testSim()
	s.checks.epochs.image(s, 1, 1, imageWith(t, 2, p(1, 1)))
	s.checks.epochs.image(s, 2, 1, imageWith(t, 2, p(2, 2)))
	require.Equal(t, "metadata-divergence", reported(s), "one offset, two images")

	s = testSim()
	s.checks.epochs.image(s, 1, 1, imageWith(t, 3, p(2, 2)))
	s.checks.epochs.image(s, 1, 2, imageWith(t, 1, p(1, 1)))
	require.Empty(t, reported(s), "a restart replays older offsets")
	s.checks.epochs.image(s, 2, 1, imageWith(t, 4, p(1, 3)))
	require.Equal(t, "epoch-regression", reported(s), "a leader epoch lower at a later offset")
}

func TestCheckHighWatermark(t *testing.T) {
	s := testSim()
	s.checks.hws.observed(s, name("b1 t-0"), k1, 3, 5)
	require.Empty(t, reported(s))
	s.checks.hws.lostFrom(tp{topic: uuid.UUID{2}}, 0)
	s.checks.hws.observed(s, name("b1 t-0"), k1, 5, 4)
	require.Equal(t, "hw-regression", reported(s))

	s = testSim()
	log := logOf(t, "a", "b", "c")
	s.checks.hws.served(s, view{broker: 1, tp: k1}, 0, consumeResp{hw: 2, batches: [][]byte{log.batches[0].Data, log.batches[2].Data}})
	require.Equal(t, "read-above-hw", reported(s))
}

func TestCheckProducerIDs(t *testing.T) {
	s := testSim()
	s.checks.pids.block(s, &broker{id: 1}, 0, 10)
	s.checks.pids.block(s, &broker{id: 2}, 10, 10)
	require.Empty(t, reported(s))
	s.checks.pids.block(s, &broker{id: 3}, 15, 10)
	require.Equal(t, "duplicate-producer-id", reported(s))
}

func TestCheckEpochAhead(t *testing.T) {
	s := testSim()
	s.checks.epochs.ahead(s, view{broker: 1, tp: k1, epoch: 3}, 3)
	require.Empty(t, reported(s))
	s.checks.epochs.ahead(s, view{broker: 1, tp: k1, epoch: 3}, 4)
	require.Equal(t, "epoch-ahead", reported(s))
}

func TestCheckRealtimeOrder(t *testing.T) {
	s := testSim()
	s.checks.order.acked(s, k1, 0, 10, 0, 1, "producer 101")
	s.checks.order.acked(s, k1, 5, 12, 0, 0, "producer 102")
	require.Empty(t, reported(s), "sent before the other was acknowledged: either order")
	s.checks.order.acked(s, k1, 20, 25, 1, 1, "producer 103")
	require.Equal(t, "realtime-order", reported(s), "sent after an acknowledgement, landed below it")
}

func TestCheckLiveness(t *testing.T) {
	r := Run(Options{Seed: 1, Brokers: 1, ReplicationFactor: 1, MinISR: 1, Topics: 1, Partitions: 1, Producers: 1, AcksAllPct: 100,
		BatchesEach: 1_000_000, DelayMin: 1, DelayMax: 1, SafetyTicks: 100, LivenessTicks: 500})
	require.True(t, r.Failed())
	require.Equal(t, "liveness", r.Violations[0].Anomaly, "a producer that cannot finish within the bound")
}

// imageWithBrokers is an image of one topic "t" with partition p, after
// brokers 1..n registered, one batch each from offset 2 (broker i's epoch
// is 1+i).
func imageWithBrokers(t *testing.T, n int32, p cluster.Partition) *cluster.Metadata {
	t.Helper()
	store := cluster.NewStore()
	batches := [][]cluster.Record{{{Bootstrap: &cluster.Bootstrap{ClusterID: "c"}}}}
	for id := int32(1); id <= n; id++ {
		batches = append(batches, []cluster.Record{{RegisterBroker: &cluster.RegisterBroker{ID: id, Incarnation: uuid.UUID{byte(id)}}}})
	}
	batches = append(batches, []cluster.Record{{CreateTopic: &cluster.CreateTopic{Name: "t", ID: k1.topic, Partitions: []cluster.Partition{p}}}})
	for i, recs := range batches {
		b, err := cluster.EncodeBatch(recs)
		require.NoError(t, err)
		require.NoError(t, store.Apply(uint64(i+1), b))
		require.NoError(t, store.Refusal(uint64(i+1)))
	}
	return store.Image()
}

func TestCheckISRBehind(t *testing.T) {
	full, short := logOf(t, "a", "b", "c"), logOf(t, "a")
	logs := map[int32]*memLog{1: full, 2: full, 3: short}
	alive := map[int32]int64{1: 2, 2: 3, 3: 4} // the broker epoch each live process registered with
	member := func(k tp, reg *cluster.Broker) (view, bool) {
		if alive[reg.ID] != reg.Epoch {
			return view{}, false
		}
		return view{broker: reg.ID, tp: k, log: logs[reg.ID]}, true
	}
	ack := func(s *Sim, off int64, v string) {
		s.checks.lost.acked(s, 101, k1, off, 1, [][]byte{[]byte(v)}, nil)
		s.checks.isr.acked(s, k1, s.checks.lost.batches[k1], member)
	}
	isr := func(members ...int32) *cluster.Metadata {
		return imageWithBrokers(t, 3, cluster.Partition{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: members})
	}

	s := testSim()
	s.checks.isr.image(s, isr(1, 2), s.checks.lost.batches, member)
	ack(s, 0, "a")
	ack(s, 1, "b")
	ack(s, 2, "c")
	require.Empty(t, reported(s), "every member holds what was acknowledged")

	s = testSim()
	ack(s, 0, "a")
	ack(s, 1, "b")
	s.checks.isr.image(s, isr(1, 2, 3), s.checks.lost.batches, member)
	require.Equal(t, "isr-behind", reported(s), "a member joined without an acknowledged record")

	s = testSim()
	s.checks.isr.image(s, isr(1, 3), s.checks.lost.batches, member)
	ack(s, 0, "a")
	require.Empty(t, reported(s))
	ack(s, 2, "c")
	require.Equal(t, "isr-behind", reported(s), "acknowledged past a member of the committed ISR")

	s = testSim()
	alive[3] = 9 // broker 3's registration is of a process that is gone
	ack(s, 1, "b")
	s.checks.isr.image(s, isr(1, 3), s.checks.lost.batches, member)
	require.Empty(t, reported(s), "a registration whose process is gone is the protections' to act on")
}

func TestCheckIneligibleJoin(t *testing.T) {
	p := cluster.Partition{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}
	before := imageWithBrokers(t, 3, p)
	store := cluster.NewStore()
	require.NoError(t, store.Restore(before.Offset(), mustSnapshot(t, before)))
	s := testSim()
	apply := func(recs ...cluster.Record) {
		was := store.Image()
		b, err := cluster.EncodeBatch(recs)
		require.NoError(t, err)
		require.NoError(t, store.Apply(was.Offset()+1, b))
		require.NoError(t, store.Refusal(was.Offset()+1))
		s.checks.joins.batch(s, was, store.Image())
	}
	join := func(isr ...int32) cluster.Record {
		p.PartitionEpoch++
		p.ISR = isr
		return cluster.Record{ChangePartition: &cluster.ChangePartition{TopicID: k1.topic, Partition: 0, State: p.Clone()}}
	}
	apply(cluster.Record{UnfenceBroker: &cluster.BrokerRef{ID: 2, Epoch: 3}})
	apply(join(1, 2))
	require.Empty(t, reported(s), "an unfenced broker joins")
	apply(join(1, 2, 3))
	require.Equal(t, "ineligible-join", reported(s), "broker 3 registered and never unfenced")
}

func mustSnapshot(t *testing.T, m *cluster.Metadata) []byte {
	t.Helper()
	data, err := m.MarshalSnapshot()
	require.NoError(t, err)
	return data
}

// name is a replica's name for checkers that format it only on a violation.
type name string

func (n name) String() string { return string(n) }
