package sim

import (
	"slices"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// reconcile makes the broker's partitions what the image says, by the
// product's reconciler's rules (broker/reconcile.go): every partition this
// broker is a replica of is opened (Manager.Ensure) and given its role
// (Partition.SetState), leading only while the image shows this
// incarnation registered with its current epoch and unfenced; partitions
// it no longer holds are removed (Manager.Remove), only once the image
// holds its current registration (an older image may predate a topic's
// creation, never its deletion).
func (b *broker) reconcile() {
	if !b.up || b.parts == nil {
		return
	}
	img := b.store.Image()
	me, ok := img.Broker(b.id)
	current := ok && b.epoch >= 0 && me.Epoch == b.epoch
	lead := current && !me.Fenced
	epoch := max(b.epoch, 0) // the product's lifecycle epoch is 0 until registered
	eligible := eligible(img)
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
				part, err := b.parts.Ensure(partition.Spec{Topic: t.Name, TopicID: t.ID, Index: int32(i), Configs: t.Configs})
				if err != nil {
					b.s.violate("partition", "b%d %s-%d: Ensure: %v", b.id, t.Name, i, err)
					return
				}
				r = newReplica(b, k, part)
				b.replicas[k] = r
			}
			b.reconcileOne(r, t, p, partition.ReplicaState{
				Self: b.id, BrokerEpoch: epoch, Lead: lead, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Replicas: p.Replicas, ISR: p.ISR, ELR: p.ELR,
				MinISR: b.core.Settings().MinISR(t), Eligible: eligible, Now: b.s.time(),
			})
			if !b.up || b.s.stopped {
				return
			}
		}
	}
	defer b.settle()
	if !current {
		return
	}
	for _, r := range sortedReplicas(b.replicas) {
		if held[r.tp] {
			continue
		}
		b.s.tracef("b%d removes %s", b.id, r.tp)
		delete(b.replicas, r.tp)
		if err := b.parts.Remove(r.tp.key()); err != nil {
			b.s.violate("partition", "b%d %s: Remove: %v", b.id, r.tp, err)
			return
		}
		r.drain()
	}
}

func (b *broker) reconcileOne(r *replica, t *cluster.Topic, p cluster.Partition, st partition.ReplicaState) {
	changed, err := r.p.SetState(st)
	if err != nil {
		// The product logs it and the partition neither leads nor follows
		// until the next image: a replica whose log, durable end and
		// epochs disagree (never, if the partition code is right).
		b.s.violate("partition", "b%d %s-%d: SetState(leader %d epoch %d): %v", b.id, t.Name, r.tp.part, p.Leader, p.LeaderEpoch, err)
		return
	}
	r.observe()
	if !changed {
		return
	}
	role := r.p.Role()
	r.fetchRole++
	r.fetchBusy, r.backoff = false, 0
	if role.Local {
		b.s.tracef("b%d leads %s epoch %d isr %v elr %v end %d hw %d", b.id, r.tp, p.LeaderEpoch, p.ISR, p.ELR, r.p.EndOffset(), r.p.HighWatermark())
		b.s.checks.leaderElected(r, p)
	}
}

// eligible are the brokers that may join an ISR, with their epochs.
func eligible(img *cluster.Metadata) []replication.ISRMember {
	var out []replication.ISRMember
	for _, b := range img.ActiveBrokers() {
		out = append(out, replication.ISRMember{ID: b.ID, BrokerEpoch: b.Epoch})
	}
	return out
}
