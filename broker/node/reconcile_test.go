package node

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
)

// images applies batches of records to a store, one offset each.
type images struct {
	t     *testing.T
	store *cluster.Store
	next  uint64
}

func newImages(t *testing.T) *images {
	im := &images{t: t, store: cluster.NewStore()}
	im.apply(cluster.Record{Bootstrap: &cluster.Bootstrap{ClusterID: "c"}})
	return im
}

func (im *images) apply(recs ...cluster.Record) *cluster.Metadata {
	im.t.Helper()
	b, err := cluster.EncodeBatch(recs)
	require.NoError(im.t, err)
	im.next++
	require.NoError(im.t, im.store.Apply(im.next, b))
	require.NoError(im.t, im.store.Refusal(im.next))
	return im.store.Image()
}

func (im *images) register(id int32) int64 {
	im.apply(cluster.Record{RegisterBroker: &cluster.RegisterBroker{ID: id, Incarnation: uuid.New(), Host: "h", Port: 9000 + id}})
	epoch := int64(im.next)
	im.apply(cluster.Record{UnfenceBroker: &cluster.BrokerRef{ID: id, Epoch: epoch}})
	return epoch
}

func topic(name string, parts ...cluster.Partition) cluster.Record {
	return cluster.Record{CreateTopic: &cluster.CreateTopic{Name: name, ID: uuid.New(), Partitions: parts}}
}

func led(leader int32, replicas ...int32) cluster.Partition {
	return cluster.Partition{Leader: leader, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: replicas, ISR: replicas}
}

func keys(ws []Work) []partition.Key {
	var out []partition.Key
	for _, w := range ws {
		out = append(out, w.Key())
	}
	return out
}

func TestReconcilerPlans(t *testing.T) {
	im := newImages(t)
	e1, e2 := im.register(1), im.register(2)
	img := im.apply(topic("a", led(1, 1, 2), led(2, 2, 3)), topic("b", led(3, 3)))
	a, _ := img.Topic("a")
	r := NewReconciler(2, func(*cluster.Metadata, *cluster.Topic) int { return 1 })

	// Not registered yet: its partitions are set up, not led, and nothing
	// held is removed on an image that may predate it.
	stray := partition.Key{TopicID: uuid.New(), Index: 0}
	p := r.Plan(img, Standing{}, []partition.Key{stray}, t0)
	require.False(t, p.Current)
	require.False(t, p.Lead)
	require.Len(t, p.Set, 2, "broker 2 holds a-0 and a-1, not b-0")
	require.Empty(t, p.Remove)
	for _, w := range p.Set {
		require.False(t, w.State.Lead)
		require.Equal(t, int32(2), w.State.Self)
	}
	r.Done(p)

	// Registered: every partition again (its standing changed), and the
	// stray one goes.
	p = r.Plan(img, Standing{Epoch: e2}, []partition.Key{stray}, t0)
	require.True(t, p.Lead)
	require.Len(t, p.Set, 2)
	require.Equal(t, []partition.Key{stray}, p.Remove)
	r.Done(p)

	// The same image and standing: nothing to do.
	p = r.Plan(img, Standing{Epoch: e2}, keys(p.Set), t0)
	require.Empty(t, p.Set)
	require.Empty(t, p.Remove)
	r.Done(p)

	// A fenced broker in the image does not lead; a standing of another
	// epoch is not current.
	img = im.apply(cluster.Record{FenceBroker: &cluster.BrokerRef{ID: 2, Epoch: e2}})
	p = r.Plan(img, Standing{Epoch: e2}, nil, t0)
	require.True(t, p.Current)
	require.False(t, p.Lead)
	p = r.Plan(img, Standing{Epoch: e1}, nil, t0)
	require.False(t, p.Current)

	// Topic a deleted: its partitions go, and so does what was committed
	// for it.
	r.Done(r.Plan(img, Standing{Epoch: e2}, nil, t0))
	img = im.apply(cluster.Record{DeleteTopic: &cluster.DeleteTopic{TopicID: a.ID}})
	held := []partition.Key{{TopicID: a.ID, Index: 0}, {TopicID: a.ID, Index: 1}}
	p = r.Plan(img, Standing{Epoch: e2}, held, t0)
	require.Equal(t, held, p.Remove)
	require.Equal(t, []string{"a"}, p.Deleted)
}

// A reassignment that moves a partition off this broker removes it here,
// while the topic lives on; one that moves a partition onto it sets it up
// as a follower with the replica set of the move.
func TestReconcilerReassignment(t *testing.T) {
	im := newImages(t)
	im.register(1)
	e2 := im.register(2)
	im.register(3)
	img := im.apply(topic("a", led(1, 1, 2), led(1, 1, 3)))
	a, _ := img.Topic("a")
	r := NewReconciler(2, func(*cluster.Metadata, *cluster.Topic) int { return 1 })
	p := r.Plan(img, Standing{Epoch: e2}, nil, t0)
	require.Len(t, p.Set, 1, "a-0 only")
	r.Done(p)

	// a-0 completes a move onto [1 3], a-1 starts one onto [3 2].
	p0, p1 := a.Partitions[0], a.Partitions[1]
	p0.Replicas, p0.ISR, p0.PartitionEpoch = []int32{1, 3}, []int32{1}, 2
	p1.Replicas, p1.AddingReplicas, p1.RemovingReplicas, p1.PartitionEpoch = []int32{3, 2, 1}, []int32{2}, []int32{1}, 2
	img = im.apply(
		cluster.Record{ChangePartition: &cluster.ChangePartition{TopicID: a.ID, Partition: 0, State: p0}},
		cluster.Record{ChangePartition: &cluster.ChangePartition{TopicID: a.ID, Partition: 1, State: p1}},
	)
	p = r.Plan(img, Standing{Epoch: e2}, []partition.Key{{TopicID: a.ID, Index: 0}}, t0)
	require.Equal(t, []partition.Key{{TopicID: a.ID, Index: 0}}, p.Remove)
	require.Empty(t, p.Deleted, "the topic is still there")
	require.Equal(t, []partition.Key{{TopicID: a.ID, Index: 1}}, keys(p.Set))
	w := p.Set[0]
	require.Equal(t, int32(1), FetchLeader(w), "a follower of the leader")
	require.Equal(t, []int32{3, 2, 1}, w.State.Replicas)
}
