package sim

import (
	"fmt"
	"slices"

	"github.com/minikafka/minikafka/cluster"
)

// isrHolds looks for isr-behind: a member of a partition's committed ISR,
// in the incarnation its registration names, whose log lacks a record
// acknowledged with acks=all (CLUSTER.md invariant 5: a replica joins the
// ISR only while unfenced, with the broker epoch the leader saw it fetch
// with, and only when caught up within the current leader epoch; and the
// HW covers only what every committed member has, KIP-497). Any member
// may be elected next, so an ISR that names one without an acknowledged
// record is a lost write one election away: the ISR is checked, not only
// the leaders elected from it.
//
// The ISR is the latest metadata any broker applied (an offset is one
// image everywhere), checked when an image of a new offset is applied and
// when a batch is acknowledged. A member is checked only in the process
// that holds its registration: a registration whose process is gone (a
// crash, not yet noticed) names a disk the controller cannot see into,
// and the product's protections (fencing, broker epochs) act when that
// broker registers again. Under sync=interval and never an acknowledgement
// promises memory, not disks, and under unclean election no ISR promises
// anything: the checker runs only with sync=always and clean elections.
type isrHolds struct {
	latest *cluster.Metadata
	// held is, per replica of one process (one registration), how many
	// of its partition's acknowledged batches its log was seen to hold:
	// in the product a replica never drops an acknowledged record it holds
	// (the lost-write checker looks at what a leader drops), so each is
	// read once.
	held map[isrHeldKey]int
}

type isrHeldKey struct {
	k      tp
	broker int32
	epoch  int64 // the registration's broker epoch: one process
}

func (h *isrHolds) init() { h.held = map[isrHeldKey]int{} }

// memberOf resolves an ISR member of partition k: the view of the replica
// of the process holding registration reg; false when no live process
// does, or it has no replica of k open yet.
type memberOf func(k tp, reg *cluster.Broker) (view, bool)

// image is a broker applying img: a newer offset than any seen is the ISR
// to check, on every partition with acknowledged batches.
func (h *isrHolds) image(s *Sim, img *cluster.Metadata, acked map[tp][]*ackedBatch, member memberOf) {
	if h.latest != nil && img.Offset() <= h.latest.Offset() {
		return
	}
	h.latest = img
	for _, k := range sortedTPs(acked) {
		if !h.check(s, k, acked[k], member) {
			return
		}
	}
}

// acked is a batch of k acknowledged: every member must hold it.
func (h *isrHolds) acked(s *Sim, k tp, batches []*ackedBatch, member memberOf) {
	if h.latest != nil {
		h.check(s, k, batches, member)
	}
}

// check checks k's ISR in the latest image against its acknowledged
// batches; false when it reported a violation.
func (h *isrHolds) check(s *Sim, k tp, batches []*ackedBatch, member memberOf) bool {
	t, ok := h.latest.TopicByID(k.topic)
	if !ok || int(k.part) >= len(t.Partitions) {
		return true
	}
	p := t.Partitions[k.part]
	for _, id := range p.ISR {
		reg, ok := h.latest.Broker(id)
		if !ok {
			continue
		}
		v, ok := member(k, reg)
		if !ok {
			continue
		}
		hk := isrHeldKey{k, id, reg.Epoch}
		for i := h.held[hk]; i < len(batches); i++ {
			a := batches[i]
			if a.excused {
				continue
			}
			for j, want := range a.values {
				off := a.base + int64(j)
				if off < v.log.StartOffset() {
					continue // retention or DeleteRecords took it, as asked
				}
				if got, ok := valueAt(s, v, off); !ok || !slices.Equal(got, want) {
					s.violate("isr-behind", "broker %d (broker epoch %d) is in the ISR %v of %s (leader %d, leader epoch %d, partition epoch %d, metadata offset %d) without what %s acknowledged at offset %d: %q there, log [%d, %d)",
						id, reg.Epoch, p.ISR, k, p.Leader, p.LeaderEpoch, p.PartitionEpoch, h.latest.Offset(), a.by, off, got, v.log.StartOffset(), v.log.EndOffset())
					return false
				}
			}
			h.held[hk] = i + 1
		}
	}
	return true
}

// isrMember is the memberOf of a run: the replica of k of the broker
// process whose registration reg is.
func (s *Sim) isrMember(k tp, reg *cluster.Broker) (view, bool) {
	b := s.brokers[reg.ID-1]
	if !b.up || b.life == nil || b.life.Epoch() != reg.Epoch {
		return view{}, false
	}
	r := b.replicas[k]
	if r == nil {
		return view{}, false
	}
	return r.view(), true
}

// isrJoins looks for ineligible-join: a replica added to a partition's ISR
// by a metadata batch that leaves it fenced or shutting down (invariant 5's
// first clause; KIP-841: such a member cannot be elected, and one that is
// leaving holds the high watermark back until the leader drops it again).
// Each committed batch is seen once, with the image before it, as the
// voters apply it (watchedStore); a new partition's first ISR is its
// placement, not a join.
type isrJoins struct {
	checked uint64 // the last batch offset checked
}

// batch is the committed batch that took the metadata from before to
// after.
func (j *isrJoins) batch(s *Sim, before, after *cluster.Metadata) {
	if after.Offset() <= j.checked {
		return
	}
	j.checked = after.Offset()
	for _, t := range after.Topics() {
		was, ok := before.TopicByID(t.ID)
		if !ok {
			continue
		}
		for i, p := range t.Partitions {
			if i >= len(was.Partitions) {
				continue
			}
			for _, id := range p.ISR {
				if slices.Contains(was.Partitions[i].ISR, id) {
					continue
				}
				if b, ok := after.Broker(id); !ok || !b.Active() {
					w := was.Partitions[i]
					s.violate("ineligible-join", "broker %d joined the ISR of %s-%d at metadata offset %d while %s: leader %d, ISR %v, ELR %v at leader epoch %d, partition epoch %d (before: leader %d, ISR %v, ELR %v)",
						id, t.Name, i, after.Offset(), standing(b, ok), p.Leader, p.ISR, p.ELR, p.LeaderEpoch, p.PartitionEpoch, w.Leader, w.ISR, w.ELR)
					return
				}
			}
		}
	}
}

func standing(b *cluster.Broker, registered bool) string {
	switch {
	case !registered:
		return "not registered"
	case b.Fenced:
		return fmt.Sprintf("fenced (broker epoch %d)", b.Epoch)
	}
	return fmt.Sprintf("shutting down (broker epoch %d)", b.Epoch)
}

// watchedStore is a voter's state machine: the broker's cluster.Store,
// each committed batch shown to the checkers with the image before it.
type watchedStore struct {
	*cluster.Store
	s *Sim
}

func (w watchedStore) Apply(index uint64, payload []byte) error {
	before := w.Image()
	if err := w.Store.Apply(index, payload); err != nil {
		return err
	}
	w.s.checks.joins.batch(w.s, before, w.Image())
	return nil
}
