package sim

import "github.com/minikafka/minikafka/cluster"

// leaderEpochs checks that a partition has at most one leader per leader
// epoch: in every broker's metadata (the same epoch names the same leader
// everywhere) and among the replicas that act as leader; and that a broker
// never leads a partition at an epoch below one it has held the partition
// at, in any role and incarnation (its log and epoch cache outlive its
// process).
type leaderEpochs struct {
	meta   map[epochKey]int32
	acting map[epochKey]int32
	held   map[heldKey]int32 // the highest epoch a broker held a partition at
}

type heldKey struct {
	broker int32
	tp     tp
}

type epochKey struct {
	tp    tp
	epoch int32
}

func (l *leaderEpochs) init() {
	l.meta = map[epochKey]int32{}
	l.acting = map[epochKey]int32{}
	l.held = map[heldKey]int32{}
}

// role is broker b's replica of k taking a role at epoch, leading or not.
func (l *leaderEpochs) role(s *Sim, b int32, k tp, epoch int32, leads bool) {
	hk := heldKey{b, k}
	if prev, ok := l.held[hk]; ok && leads && epoch < prev {
		s.violate("epoch-regression", "broker %d leads %s at epoch %d, having held it at epoch %d", b, k, epoch, prev)
		return
	}
	l.held[hk] = max(l.held[hk], epoch)
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

func (l *leaderEpochs) elected(s *Sim, r view, epoch int32) {
	k := epochKey{r.tp, epoch}
	if prev, ok := l.acting[k]; ok && prev != r.broker {
		s.violate("two-leaders", "%s epoch %d: broker %d leads it, and broker %d did", r.tp, epoch, r.broker, prev)
		return
	}
	l.acting[k] = r.broker
}
