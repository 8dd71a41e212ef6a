package cluster

import (
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// threeBrokers is an image with brokers 1-3 registered and active and
// topic t of 3 partitions over all three.
func threeBrokers(t *testing.T) *Metadata {
	t.Helper()
	m := Empty()
	apply := func(recs ...Record) {
		t.Helper()
		var err error
		m, err = m.Apply(m.Offset()+1, recs)
		require.NoError(t, err)
	}
	apply(Record{Bootstrap: &Bootstrap{ClusterID: "c"}})
	for id := int32(1); id <= 3; id++ {
		apply(Record{RegisterBroker: &RegisterBroker{ID: id, Incarnation: uuid.New(), Host: "h", Port: 1}})
		b, _ := m.Broker(id)
		apply(Record{UnfenceBroker: &BrokerRef{ID: id, Epoch: b.Epoch}})
	}
	rec, err := Settings{}.WithDefaults().CreateTopic(m, NewTopic{Name: "t", Partitions: 3, ReplicationFactor: 3}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	apply(rec)
	return m
}

func TestApplyIsAllOrNothing(t *testing.T) {
	m := threeBrokers(t)
	tp, _ := m.Topic("t")
	p := tp.Partitions[0]
	good := p.Clone()
	good.ISR = []int32{p.Leader}
	good.PartitionEpoch++
	// The second record repeats the partition epoch the first one used: the
	// whole batch is refused, the first record included.
	bad := good.Clone()
	recs := []Record{
		{ChangePartition: &ChangePartition{TopicID: tp.ID, Partition: 0, State: good}},
		{ChangePartition: &ChangePartition{TopicID: tp.ID, Partition: 0, State: bad}},
	}
	next, err := m.Apply(m.Offset()+1, recs)
	require.ErrorIs(t, err, ErrRefused)
	require.Equal(t, m.Offset()+1, next.Offset(), "a refused entry is still consumed")
	nt, _ := next.Topic("t")
	require.Equal(t, p, nt.Partitions[0], "nothing of the batch applied")

	// The old image is untouched by a later successful batch.
	next, err = m.Apply(m.Offset()+1, recs[:1])
	require.NoError(t, err)
	nt, _ = next.Topic("t")
	require.Equal(t, good, nt.Partitions[0])
	ot, _ := m.Topic("t")
	require.Equal(t, p, ot.Partitions[0], "images are immutable")

	_, err = m.Apply(m.Offset(), recs[:1])
	require.ErrorIs(t, err, ErrRefused, "an offset that is not after the image's")
}

func TestApplyRefusesBrokenInvariants(t *testing.T) {
	m := threeBrokers(t)
	tp, _ := m.Topic("t")
	p := tp.Partitions[0]
	for name, mutate := range map[string]func(*Partition){
		"leader outside the ISR":        func(n *Partition) { n.ISR = without(n.ISR, n.Leader) },
		"ISR member not a replica":      func(n *Partition) { n.ISR = append(n.ISR, 9) },
		"ELR overlapping the ISR":       func(n *Partition) { n.ELR = []int32{n.ISR[0]} },
		"leader change without epoch":   func(n *Partition) { n.Leader = n.ISR[1] },
		"leader epoch without a change": func(n *Partition) { n.LeaderEpoch++ },
		"reassignment":                  func(n *Partition) { n.Replicas = []int32{1, 2} },
	} {
		t.Run(name, func(t *testing.T) {
			n := p.Clone()
			n.PartitionEpoch++
			mutate(&n)
			_, err := m.Apply(m.Offset()+1, []Record{{ChangePartition: &ChangePartition{TopicID: tp.ID, State: n}}})
			require.ErrorIs(t, err, ErrRefused)
		})
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	m := threeBrokers(t)
	b, err := m.MarshalSnapshot()
	require.NoError(t, err)
	got, err := UnmarshalSnapshot(b)
	require.NoError(t, err)
	require.Equal(t, dump(m), dump(got))
	again, err := got.MarshalSnapshot()
	require.NoError(t, err)
	require.Equal(t, b, again, "encoding is deterministic")

	_, err = UnmarshalSnapshot([]byte(`{"topics":[{"name":"t","partitions":[{"replicas":[1],"isr":[2],"leader":2}]}]}`))
	require.Error(t, err, "a snapshot that breaks an invariant")
}

func TestBatchEncoding(t *testing.T) {
	recs := []Record{{Barrier: &Barrier{}}, {FenceBroker: &BrokerRef{ID: 1, Epoch: 2}}}
	b, err := EncodeBatch(recs)
	require.NoError(t, err)
	got, err := DecodeBatch(b)
	require.NoError(t, err)
	require.Equal(t, recs, got)
	_, err = DecodeBatch([]byte(`[{"barrier":{},"fenceBroker":{"id":1}}]`))
	require.Error(t, err, "two kinds in one record")
	_, err = DecodeBatch([]byte(`[{}]`))
	require.Error(t, err, "no kind")
	_, err = EncodeBatch(nil)
	require.Error(t, err)
}

func TestPlacementSpreadsLeaders(t *testing.T) {
	brokers := []*Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	as := place(brokers, 40, 3, rand.New(rand.NewPCG(7, 7)))
	leaders := map[int32]int{}
	for _, r := range as {
		require.Len(t, r, 3)
		seen := map[int32]bool{}
		for _, b := range r {
			require.False(t, seen[b], "replica repeated in %v", r)
			seen[b] = true
		}
		leaders[r[0]]++
	}
	for id := int32(1); id <= 4; id++ {
		require.Equal(t, 10, leaders[id], "leaders spread evenly: %v", leaders)
	}
	// With racks, each partition spans both racks.
	racked := []*Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}}
	for _, r := range place(racked, 20, 2, rand.New(rand.NewPCG(3, 3))) {
		rackOf := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
		require.NotEqual(t, rackOf[r[0]], rackOf[r[1]], "replicas %v on one rack", r)
	}
}
