package sim

import (
	"github.com/minikafka/minikafka/broker/node"
)

// reconcile makes the broker's partitions what the image says: the
// product's node.Reconciler plans it, and the driver carries the plan out
// as the broker's reconciler does (node.Apply for each partition to set
// up, its follower handed to the fetchers; Manager.Remove for each to
// drop), one partition after another.
func (b *broker) reconcile() {
	if !b.up || b.parts == nil {
		return
	}
	defer b.settle()
	plan := b.recon.Plan(b.store.Image(), b.life.Standing(), b.parts.Keys(), b.s.time())
	for _, w := range plan.Set {
		part, changed, err := node.Apply(b.parts, w)
		if err != nil {
			// The product logs it and the partition neither leads nor
			// follows until the next image: a replica whose log, durable
			// end and epochs disagree (never, if the partition code is
			// right).
			b.s.violate("partition", "b%d %s-%d: leader %d epoch %d: %v", b.id, w.Topic.Name, w.Index, w.State.Leader, w.State.LeaderEpoch, err)
			return
		}
		k := tp{w.Topic.ID, w.Index}
		r := b.replicas[k]
		if r == nil || r.p != part {
			r = newReplica(b, k, part)
			b.replicas[k] = r
			b.s.checks.opened(k, part.ShortOfHighWatermark())
		}
		r.observe()
		if !changed {
			continue
		}
		role := part.Role()
		if role.Local {
			b.s.tracef("b%d leads %s epoch %d isr %v elr %v end %d hw %d", b.id, k, w.State.LeaderEpoch, w.State.ISR, w.State.ELR, part.EndOffset(), part.HighWatermark())
		}
		b.s.checks.roleTaken(r, role.LeaderEpoch, role.Local)
		b.follow(part, w.State.Leader)
		if !b.up || b.s.stopped {
			return
		}
	}
	for _, k := range plan.Remove {
		t := tp{k.TopicID, k.Index}
		b.s.tracef("b%d removes %s", b.id, t)
		r := b.replicas[t]
		delete(b.replicas, t)
		if stopped := b.fetchers.Unfollow(k); stopped != nil {
			b.stopSession(stopped)
		}
		if err := b.parts.Remove(k); err != nil {
			b.s.violate("partition", "b%d %s: Remove: %v", b.id, t, err)
			return
		}
		if r != nil {
			r.drain()
		}
	}
	b.recon.Done(plan)
}
