package sim

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/minikafka/minikafka/broker/batch/batchcodec"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// view is what a checker sees of one broker's replica: its log, through
// the partition's API (a checker's test gives it one of its own).
type view struct {
	broker int32
	tp     tp
	epoch  int32 // the leader epoch of its role
	log    logReader
}

// logReader reads a replica's stored batches (a *partition.Partition).
type logReader interface {
	StartOffset() int64
	EndOffset() int64
	ReadLog(offset int64, maxBytes int) ([]engine.Batch, error)
}

func (r *replica) view() view {
	return view{broker: r.b.id, tp: r.tp, epoch: r.p.Role().LeaderEpoch, log: r.p}
}

// checks holds every checker of a run. The simulator calls the hooks below
// where the product would make the observation (a leader elected, a high
// watermark moved, a record acknowledged, a poll answered); each hook hands
// it to the checkers that care, one file each, named after the anomaly
// they look for (Jepsen's names where there is one).
type checks struct {
	s          *Sim
	violations []Violation

	lost    lostWrites
	dups    duplicates
	offsets offsetHistory
	leaders leaderEpochs
	epochs  epochMonotony
	hws     highWatermarks
	polls   nonmonotonicPolls
	skips   pollSkips
	pids    producerIDBlocks
	order   realtimeOrder
	isr     isrHolds
	joins   isrJoins
	txns    txnHistory
	copies  copyHistory
}

func newChecks(s *Sim) *checks {
	c := &checks{s: s}
	c.lost.init()
	c.dups.init()
	c.offsets.init()
	c.leaders.init()
	c.epochs.init()
	c.hws.init()
	c.polls.init()
	c.skips.init()
	c.order.init()
	c.isr.init()
	return c
}

func (c *checks) brokerStarted(b *broker) {}
func (c *checks) brokerStopped(b *broker) {}

func (c *checks) imageApplied(b *broker, img *cluster.Metadata) {
	c.epochs.image(c.s, b.id, b.gen, img)
	c.leaders.image(c.s, b, img)
	if c.isrChecked() {
		c.isr.image(c.s, img, c.lost.batches, c.s.isrMember)
	}
}

// isrChecked: the ISR promises to hold every acknowledged record only
// under sync=always and clean elections (isrHolds).
func (c *checks) isrChecked() bool {
	return c.s.opts.Sync == engine.SyncAlways && !c.s.opts.Unclean
}

func (c *checks) producerIDs(b *broker, first, n int64) { c.pids.block(c.s, b, first, n) }

// opened is a replica of k opened: whether it came back short of its
// checkpointed high watermark, which the product reports (counted; the
// checkpoint lags, so a loss need not show).
func (c *checks) opened(k tp, short int64) {
	if short > 0 {
		c.s.stats.Faults["log-short-of-hw"]++
	}
}

func (c *checks) roleTaken(r *replica, epoch int32, leads bool) {
	c.leaders.role(c.s, r.b.id, r.tp, epoch, leads)
	if leads {
		c.leaders.elected(c.s, r.view(), epoch)
		c.lost.elected(c.s, r.view())
	}
}

func (c *checks) hwObserved(r *replica, from, to int64) {
	c.hws.observed(c.s, r, r.tp, from, to)
	if to > from {
		c.offsets.committed(c.s, r.view(), from, to)
	}
}

func (c *checks) served(r *replica, offset int64, resp consumeResp) {
	c.hws.served(c.s, r.view(), offset, resp)
}

// acked is an acknowledgement received; held is what holders said when
// the leader sent it.
func (c *checks) acked(p *producerClient, k tp, base, last int64, epoch int32, values [][]byte, held []holder) {
	if p.acks == -1 {
		c.s.stats.AckedAll++
		c.order.acked(c.s, k, p.firstSent, c.s.now, base, last, fmt.Sprintf("producer %d", p.id))
	} else {
		c.s.stats.AckedOne++
		return
	}
	holders, lost := c.stillHeld(k, base, last, values[0], held)
	c.lost.acked(c.s, p.id, k, base, epoch, values, holders)
	if lost {
		c.lost.excuse(c.s, k, base)
		c.s.stats.Faults["acked-lost-unsynced"]++
		c.s.tracef("acknowledged batches of %s from offset %d lost with every copy unsynced before the answer came", k, base)
		c.forget(k, base)
	}
	if c.isrChecked() {
		c.isr.acked(c.s, k, c.lost.batches[k], c.s.isrMember)
	}
}

// holder is a broker whose log held a batch unsynced, in incarnation gen.
type holder struct {
	id  int32
	gen int
}

// holders are the live brokers whose log holds the batch at base
// unsynced, under a sync policy that acknowledges from memory; nil when
// the policy is always or a copy is synced already.
func (c *checks) holders(k tp, base, last int64, first []byte) []holder {
	if c.s.opts.Sync == engine.SyncAlways {
		return nil
	}
	holders := []holder{}
	for _, b := range c.s.brokers {
		r := b.replicas[k]
		if !b.up || r == nil {
			continue
		}
		if v, ok := valueAt(c.s, r.view(), base); !ok || !bytes.Equal(v, first) {
			continue
		}
		if c.holdsSynced(b, k, base, last+1, first) {
			return nil
		}
		holders = append(holders, holder{b.id, b.gen})
	}
	return holders
}

// stillHeld is held (holders when the leader answered) when the answer
// arrives: a holder that has lost power since no longer holds the batch,
// unless it synced it before; a broker that holds it now (a follower that
// fetched it since) does. It reports lost when none is left.
func (c *checks) stillHeld(k tp, base, last int64, first []byte, held []holder) ([]int32, bool) {
	if held == nil {
		return nil, false
	}
	ids := []int32{}
	for _, h := range held {
		b := c.s.brokers[h.id-1]
		switch {
		case b.gen == h.gen:
			ids = append(ids, h.id)
		case c.holdsSynced(b, k, base, last+1, first):
			return nil, false
		}
	}
	now := c.holders(k, base, last, first)
	if now == nil {
		return nil, false // a copy is synced now
	}
	for _, h := range now {
		if !slices.Contains(ids, h.id) {
			ids = append(ids, h.id)
		}
	}
	return ids, len(held) > 0 && len(ids) == 0
}

// holdsSynced reports whether broker b's log of k holds durably the batch
// at base (first: its first value) up to end, a copy no power loss takes.
// By value, not by offset: a log truncated and written again since holds
// other records at the same offsets.
func (c *checks) holdsSynced(b *broker, k tp, base, end int64, first []byte) bool {
	r := b.replicas[k]
	if r == nil {
		return false
	}
	l, ok := b.disk.partitionLog(r.p.LogID())
	return ok && l.holds(c.s, b.id, k, base, end, first)
}

// holds reports whether l holds durably the batch at base, up to end,
// whose first value is first.
func (l durableLog) holds(s *Sim, broker int32, k tp, base, end int64, first []byte) bool {
	if l.synced < end {
		return false
	}
	v, ok := valueAt(s, view{broker: broker, tp: k, log: l.log}, base)
	return ok && bytes.Equal(v, first)
}

// powerLoss is broker b losing power: acknowledged batches whose every
// holder has now lost them unsynced are excused, and the history of their
// partitions from there may be written again.
func (c *checks) powerLoss(b *broker) {
	held := func(k tp, base, end int64, first []byte) bool { return c.holdsSynced(b, k, base, end, first) }
	lost := c.lost.powerLoss(c.s, b.id, held)
	for _, k := range sortedTPs(lost) {
		c.s.stats.Faults["acked-lost-unsynced"]++
		c.s.tracef("acknowledged batches of %s from offset %d lost with every copy unsynced", k, lost[k])
		c.forget(k, lost[k])
	}
	// A partition b is the only replica of loses its unsynced tail with b,
	// acknowledged or not (a coordinator's writes, acks=1), and b leads it
	// again (cluster.Settings.Register): what was committed above b's
	// synced end may be written again with other records.
	img := b.store.Image()
	for _, r := range sortedReplicas(b.replicas) {
		if c.s.opts.Sync == engine.SyncAlways || !soleReplica(img, r.tp, b.id) {
			continue
		}
		l, ok := b.disk.partitionLog(r.p.LogID())
		if !ok || l.synced >= r.p.EndOffset() {
			continue
		}
		c.s.stats.Faults["sole-replica-lost-unsynced"]++
		c.s.tracef("%s from offset %d lost with its only replica, unsynced", r.tp, l.synced)
		c.forget(r.tp, l.synced)
	}
}

// forget is k's history from off lost with every copy unsynced: the
// checkers that remember what was committed there forget it.
func (c *checks) forget(k tp, off int64) {
	c.offsets.forget(k, off)
	for _, br := range c.s.brokers {
		if r := br.replicas[k]; r != nil && br.up {
			r.hw = min(r.hw, off) // what commits there next is recorded anew
		}
	}
	c.order.forget(k, off)
	c.hws.lostFrom(k, off)
}

// soleReplica reports whether broker id is the only replica of k in img.
func soleReplica(img *cluster.Metadata, k tp, id int32) bool {
	t, ok := img.TopicByID(k.topic)
	if !ok || int(k.part) >= len(t.Partitions) {
		return false
	}
	p := t.Partitions[k.part]
	return slices.Equal(p.Replicas, []int32{id}) && len(p.AddingReplicas) == 0
}

func (c *checks) polled(cl *consumerClient, k tp, pos int64, batches [][]byte) {
	var recs []batchcodec.Record
	var each [][]batchcodec.Record
	for _, b := range batches {
		rs := decode(c.s, [][]byte{b})
		each = append(each, rs)
		recs = append(recs, rs...)
	}
	c.s.stats.Reads += len(recs)
	c.polls.polled(c.s, cl.id, k, pos, each)
	c.skips.polled(c.s, cl.id, k, pos, recs)
	c.offsets.read(c.s, cl, k, recs)
	c.dups.read(c.s, k, recs, c.offsets.wasLost)
	var next int64 = pos
	for _, r := range recs {
		if r.Offset >= next {
			next = r.Offset + 1
		}
	}
	cl.pos = next
}

// final runs the end-of-run checks on the converged cluster.
func (c *checks) final() {
	for _, b := range c.s.brokers {
		for _, r := range sortedReplicas(b.replicas) {
			if r.p.Role().Local {
				c.lost.elected(c.s, r.view())
				c.dups.log(c.s, r.view())
			}
		}
	}
	if c.s.opts.transactions() && !c.s.stopped {
		visible, hanging := c.s.readCommittedAll()
		c.txns.final(c.s, visible, hanging)
		if c.s.opts.copiers() > 0 && len(c.violations) == 0 {
			c.copies.final(c.s, visible, c.s.copyFinal())
		}
	}
}

// decode reads the records of stored batches; a batch that does not decode
// is a violation (the product never stores one).
func decode(s *Sim, batches [][]byte) []batchcodec.Record {
	var out []batchcodec.Record
	for _, b := range batches {
		recs, err := batchcodec.Decode(b)
		if err != nil {
			s.violate("corrupt-read", "a stored batch does not decode: %v", err)
			return nil
		}
		out = append(out, recs...)
	}
	return out
}
