package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// Faults of the safety phase, each kind at its own rate (Options): broker
// crashes (power loss) and restarts, network partitions of three kinds and
// stalls,
// disk faults (a failing sync, a full disk, slow syncs) and controlled
// shutdowns. The liveness phase heals them all (Sim.heal).

func (s *Sim) scheduleFaults() {
	o := s.opts
	every := func(mean int64, kind string, fn func()) {
		if mean <= 0 {
			return
		}
		var next func()
		next = func() {
			if s.phase != "safety" {
				return
			}
			fn()
			s.at(mean/2+s.faults.Int64N(mean), kind, next)
		}
		s.at(300+s.faults.Int64N(mean), kind, next)
	}
	every(o.CrashEvery, "fault-crash", s.crashOne)
	if o.LostBroker > 0 {
		var lose func()
		lose = func() {
			if len(s.admin.pending) > 0 { // the topics need every broker to be created
				s.at(100, "fault-lose", lose)
				return
			}
			b := s.brokers[o.LostBroker-1]
			s.stats.Faults["broker-lost"]++
			b.crash("lost for good")
			b.lost = true
		}
		s.at(o.SafetyTicks/3+s.faults.Int64N(o.SafetyTicks/2), "fault-lose", lose)
	}
	every(o.PartitionEvery, "fault-partition", s.net.partition)
	every(o.DiskEvery, "fault-disk", s.diskFault)
	if o.ControlledStop {
		every(cmp.Or(o.ShutdownEvery, 2000), "fault-shutdown", func() {
			b := s.brokers[s.faults.IntN(len(s.brokers))]
			if b.up && b.life.Epoch() != 0 {
				s.stats.Faults["shutdown-requested"]++
				b.beginShutdown()
			}
		})
	}
	every(o.StallEvery, "fault-stall", s.net.stallLinks)
	every(o.DeleteRecordsEvery, "delete-records", s.deleteRecords)
	every(o.MetadataStallEvery, "fault-metadata-stall", s.net.stallMetadata)
}

// deleteRecords moves the log start of a workload partition, at its
// leader, to a random offset below its high watermark, as a DeleteRecords
// request does; followers follow it through their fetches.
func (s *Sim) deleteRecords() {
	name := fmt.Sprintf("t%d", s.faults.IntN(s.opts.Topics))
	part := int32(s.faults.IntN(s.opts.Partitions))
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		t, ok := b.store.Image().Topic(name)
		if !ok || int(part) >= len(t.Partitions) {
			return
		}
		r := b.replicas[tp{t.ID, part}]
		if r == nil || !r.role().Local {
			continue
		}
		hw, start := r.p.HighWatermark(), r.p.StartOffset()
		if hw <= start {
			return
		}
		to := start + 1 + s.faults.Int64N(hw-start)
		if start, err := r.p.DeleteBefore(to); err == nil {
			s.stats.Faults["delete-records"]++
			s.tracef("b%d %s: log start moved to %d (asked %d)", b.id, r.tp, start, to)
		}
		return
	}
}

func (s *Sim) crashOne() {
	b := s.brokers[s.faults.IntN(len(s.brokers))]
	if s.opts.CrashController {
		for _, c := range s.brokers {
			if c.up && c.active() {
				b = c
			}
		}
	}
	if !b.up {
		return
	}
	s.stats.Faults["crash"]++
	b.crash("power loss")
	after := 100 + s.faults.Int64N(1500)
	if s.opts.QuickRestarts {
		after = 5 + after%50
	}
	s.at(after, "restart", func() {
		if !b.up && !b.lost && s.phase == "safety" {
			b.start()
		}
	})
}

func (s *Sim) diskFault() {
	b := s.brokers[s.faults.IntN(len(s.brokers))]
	if !b.up {
		return
	}
	gen := b.gen
	kind := s.faults.IntN(3)
	if s.opts.SlowDisks {
		kind = 2
	}
	switch kind {
	case 0:
		s.stats.Faults["disk-sync-error"]++
		s.tracef("b%d: the next sync fails", b.id)
		b.disk.fail = true
	case 1:
		s.stats.Faults["disk-full"]++
		s.tracef("b%d: disk full", b.id)
		b.disk.full = true
		s.at(200+s.faults.Int64N(800), "disk-free", func() {
			if b.gen == gen {
				b.disk.full = false
			}
		})
	case 2:
		s.stats.Faults["disk-slow"]++
		s.tracef("b%d: slow syncs", b.id)
		b.slowSync = true
		s.at(200+s.faults.Int64N(800), "disk-fast", func() { b.slowSync = false })
	}
}

// converged: the liveness goal after healing: every partition of the
// workload's topics has a leader with its whole replica set in the ISR, as
// every live broker's image says, and every producer has finished.
func (s *Sim) converged() bool { return s.notConverged() == "" }

func (s *Sim) notConverged() string {
	for _, c := range s.clients {
		if p, ok := c.(*producerClient); ok && s.lostForGood(p.topic, p.part) {
			continue
		}
		if !c.done() {
			return c.describe()
		}
	}
	if len(s.admin.pending) > 0 {
		return fmt.Sprintf("topic %s not created", s.admin.pending[0])
	}
	var live []*broker
	for _, b := range s.brokers {
		if b.lost {
			continue
		}
		live = append(live, b)
		if !b.up {
			return fmt.Sprintf("b%d down", b.id)
		}
		if b.life.Epoch() == 0 || b.life.Fenced() || b.life.ShuttingDown() {
			return fmt.Sprintf("b%d not registered and unfenced", b.id)
		}
	}
	img := live[0].store.Image()
	for _, b := range live[1:] {
		if b.store.Image().Offset() != img.Offset() {
			return fmt.Sprintf("b%d metadata at %d, b%d at %d", b.id, b.store.Image().Offset(), live[0].id, img.Offset())
		}
	}
	topics := []string{}
	for i := range s.opts.Topics {
		topics = append(topics, fmt.Sprintf("t%d", i))
	}
	if s.opts.transactions() {
		topics = append(topics, txnStateTopic, txnTopic)
		if s.opts.copiers() > 0 {
			topics = append(topics, copyInTopic, offsetsTopic)
		}
		if why := s.txnsPending(live); why != "" {
			return why
		}
	}
	for _, name := range topics {
		t, ok := img.Topic(name)
		if !ok {
			return fmt.Sprintf("%s missing", name)
		}
		for pi, p := range t.Partitions {
			want := len(p.Replicas)
			if s.opts.LostBroker > 0 && slices.Contains(p.Replicas, s.opts.LostBroker) {
				want--
			}
			if s.lostForGood(t.Name, int32(pi)) {
				continue
			}
			if p.Leader == cluster.NoLeader || len(without(p.ISR, s.opts.LostBroker)) != want {
				return fmt.Sprintf("%s-%d leader %d epoch %d isr %v replicas %v;%s", t.Name, pi, p.Leader, p.LeaderEpoch, p.ISR, p.Replicas, s.describeReplicas(tp{t.ID, int32(pi)}))
			}
			r := s.brokers[p.Leader-1].replicas[tp{t.ID, int32(pi)}]
			if role := r.role(); !role.Local || role.LeaderEpoch != p.LeaderEpoch {
				return fmt.Sprintf("%s-%d: broker %d does not lead it yet", t.Name, pi, p.Leader)
			}
			// The transaction checkers read what is committed: a new
			// leader's high watermark must have reached its log's end,
			// markers included.
			if name == txnTopic && r.p.HighWatermark() < r.p.EndOffset() {
				return fmt.Sprintf("%s-%d: high watermark %d below the log end %d at leader %d", t.Name, pi, r.p.HighWatermark(), r.p.EndOffset(), p.Leader)
			}
		}
	}
	return ""
}

// lostForGood reports whether a partition is offline for good after its
// replicas lost what they had (disk replacements, or, under sync=interval
// and never, unclean shutdowns, which take a broker out of every ELR): no
// leader, and no replica in its ISR or ELR, so only an unclean election
// (an operator's) can bring it back, as in Kafka. The liveness phase asks
// nothing of it.
func (s *Sim) lostForGood(topic string, part int32) bool {
	if s.stats.Faults["disk-lost"] == 0 && s.opts.Sync == engine.SyncAlways {
		return false
	}
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		t, ok := b.store.Image().Topic(topic)
		if !ok || int(part) >= len(t.Partitions) {
			return false
		}
		p := t.Partitions[part]
		return p.Leader == cluster.NoLeader && len(p.ISR) == 0 && len(p.ELR) == 0
	}
	return false
}

// describeReplicas says what each broker's replica of k is doing.
func (s *Sim) describeReplicas(k tp) string {
	var b strings.Builder
	for _, br := range s.brokers {
		r := br.replicas[k]
		if r == nil {
			continue
		}
		role := r.p.Role()
		fmt.Fprintf(&b, " b%d[end %d durable %d hw %d epoch %d", br.id, r.p.EndOffset(), r.p.DurableEnd(), r.p.HighWatermark(), role.LeaderEpoch)
		if st, ok := r.p.LeaderStatus(s.time()); ok {
			fmt.Fprintf(&b, " leader isr %v pending %v refused %v", st.ISR, st.Pending, st.PendingRefused)
			for _, f := range st.Followers {
				fmt.Fprintf(&b, " f%d@%d/%d", f.ID, f.FetchOffset, f.BrokerEpoch)
			}
		}
		if st, ok := r.p.FollowerState(); ok {
			fmt.Fprintf(&b, " follower of %d stale %v sync-pending %v", st.Leader, st.Stale, st.SyncPending)
		}
		b.WriteString("]")
	}
	return b.String()
}

func without(ids []int32, drop int32) []int32 {
	var out []int32
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}
