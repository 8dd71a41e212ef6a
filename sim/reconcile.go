package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"slices"

	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// reconcile makes the broker's replicas what the image says, as the
// product's reconciler: only while the image shows this incarnation
// registered (a broker that restarted follows nothing until it is), leading
// only while it is not fenced; a new leader epoch builds a new Leader or
// Follower, a change within the epoch is a MetadataUpdate; partitions it no
// longer holds are removed.
func (b *broker) reconcile() {
	if !b.up || b.epoch < 0 {
		return
	}
	img := b.store.Image()
	me, ok := img.Broker(b.id)
	if !ok || me.Epoch != b.epoch {
		return
	}
	lead := !me.Fenced
	held := map[tp]bool{}
	for _, t := range img.Topics() {
		for i, p := range t.Partitions {
			if !slices.Contains(p.Replicas, b.id) {
				continue
			}
			k := tp{t.ID, int32(i)}
			held[k] = true
			r := b.replicas[k]
			if r == nil {
				r = openReplica(b, k, t.Name)
				b.replicas[k] = r
			}
			b.reconcileOne(r, img, t, p, lead)
			if !b.up {
				return
			}
		}
	}
	for _, r := range sortedReplicas(b.replicas) {
		if !held[r.tp] {
			r.close()
			delete(b.replicas, r.tp)
			if _, exists := img.TopicByID(r.tp.topic); !exists {
				b.disk.remove(r.dir)
			}
		}
	}
}

func (b *broker) reconcileOne(r *replica, img *cluster.Metadata, t *cluster.Topic, p cluster.Partition, lead bool) {
	if p.LeaderEpoch < r.leaderEpoch {
		return // never go back (an image can't, but a rebuild might race)
	}
	switch {
	case p.Leader == b.id && lead:
		if r.leader == nil || r.leaderEpoch != p.LeaderEpoch {
			r.becomeLeader(img, t, p)
			return
		}
		r.leaderActions(r.leader, r.leader.Step(replication.MetadataUpdate{
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.ISR, ELR: p.ELR,
			Eligible: eligible(img), Now: b.s.time(),
		}))
	case p.Leader == b.id:
		if r.leader != nil || r.follower != nil {
			r.dropRole(kerr.NotLeaderForPartition)
		}
	default:
		if r.leader != nil || r.follower == nil || r.leaderEpoch != p.LeaderEpoch || r.leaderID != p.Leader {
			r.becomeFollower(p)
		}
	}
}

func localAppended(end int64) replication.LocalAppended { return replication.LocalAppended{End: end} }
