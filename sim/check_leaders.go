package sim

import "github.com/minikafka/minikafka/cluster"

// leaderEpochs checks that a partition has at most one leader per leader
// epoch: in every broker's metadata (the same epoch names the same leader
// everywhere) and among the replicas that act as leader.
type leaderEpochs struct {
	meta   map[epochKey]int32
	acting map[epochKey]int32
}

type epochKey struct {
	tp    tp
	epoch int32
}

func (l *leaderEpochs) init() {
	l.meta = map[epochKey]int32{}
	l.acting = map[epochKey]int32{}
}

func (l *leaderEpochs) image(s *Sim, b *broker, img *cluster.Metadata) {
	for _, t := range img.Topics() {
		for i, p := range t.Partitions {
			if p.Leader == cluster.NoLeader {
				continue
			}
			k := epochKey{tp{t.ID, int32(i)}, p.LeaderEpoch}
			if prev, ok := l.meta[k]; ok && prev != p.Leader {
				s.violate("two-leaders", "%s-%d epoch %d: broker %d's metadata names leader %d, another's %d", t.Name, i, p.LeaderEpoch, b.id, p.Leader, prev)
				return
			}
			l.meta[k] = p.Leader
		}
	}
}

func (l *leaderEpochs) elected(s *Sim, r *replica, epoch int32) {
	k := epochKey{r.tp, epoch}
	if prev, ok := l.acting[k]; ok && prev != r.b.id {
		s.violate("two-leaders", "%s epoch %d: broker %d leads it, and broker %d did", r.tp, epoch, r.b.id, prev)
		return
	}
	l.acting[k] = r.b.id
}
