package sim

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/coordlog"
	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
)

// Consumer groups' offsets: each broker runs the product's group
// coordinator, group.Coordinator, for every partition of
// __consumer_offsets it leads, opened (replaying the partition, with the
// transactions' pending offsets) when the leadership arrives and closed
// when it leaves, as the broker's coordSet does. This file is its driver
// for the offsets in transactions: TxnOffsetCommit (checked with the
// transaction coordinator first, KIP-890, then the coordinator's
// StartTxnOffsetCommit, answered once the high watermark passes the
// append at the same leadership), the markers that end the transactions
// (StartWriteMarker, then MarkerDurable once the marker is committed) and
// OffsetFetch with RequireStable. Group membership does not run here: the
// copiers commit as assigned consumers do, with no member and generation
// -1. Offsets never expire and compaction is off (both would arm timers
// or start goroutines).

const offsetsTopic = cluster.OffsetsTopic

// groupCoord is the driver of one group.Coordinator: the coordinator of
// one partition of __consumer_offsets, at one leadership of it.
type groupCoord struct {
	b      *broker
	r      *replica
	epoch  int32
	c      *group.Coordinator
	waits  []*offsetsWait
	closed bool
}

// offsetsWait is a transactional offset commit appended, waiting to be
// committed.
type offsetsWait struct {
	end, deadline int64
	done          func(error)
}

// groupCoordinators opens a coordinator for each partition of
// __consumer_offsets this broker leads, and closes those it no longer
// leads, or leads at a later epoch than it opened them.
func (b *broker) groupCoordinators() {
	if b.s.opts.copiers() == 0 || b.parts == nil {
		return
	}
	img := b.store.Image()
	t, ok := img.Topic(offsetsTopic)
	for _, i := range slices.Sorted(maps.Keys(b.groupCoords)) {
		c := b.groupCoords[i]
		role := c.r.p.Role()
		if !ok || !c.r.current() || !role.Local || role.LeaderEpoch != c.epoch {
			b.s.tracef("b%d closes the group coordinator of %s-%d epoch %d", b.id, offsetsTopic, i, c.epoch)
			c.close()
			delete(b.groupCoords, i)
		}
	}
	if !ok {
		return
	}
	for i := range t.Partitions {
		r := b.replicas[tp{t.ID, int32(i)}]
		if r == nil || b.groupCoords[int32(i)] != nil {
			continue
		}
		if role := r.p.Role(); role.Local {
			b.openGroupCoord(int32(i), r, role.LeaderEpoch)
		}
	}
}

func (b *broker) openGroupCoord(i int32, r *replica, epoch int32) {
	cfg := group.Config{
		Log: coordLog{r.p}, Clock: simClock{b.s}, OffsetsRetention: -1, CompactMinBytes: -1,
		PartitionExists: func(topic string, part int32) bool {
			t, ok := b.store.Image().Topic(topic)
			return ok && part >= 0 && int(part) < len(t.Partitions)
		},
	}
	mutateGroups(&cfg, b.s.opts.Mutation)
	c, err := group.Open(cfg)
	if err != nil {
		b.s.violate("partition", "b%d: the group coordinator of %s-%d does not load: %v", b.id, offsetsTopic, i, err)
		return
	}
	b.groupCoords[i] = &groupCoord{b: b, r: r, epoch: epoch, c: c}
	b.s.tracef("b%d opens the group coordinator of %s-%d epoch %d", b.id, offsetsTopic, i, epoch)
}

// close ends the coordinator as the broker's coordSet does when the
// leadership leaves: the commits waiting fail as the coordinator's
// durable waits do when it closes.
func (c *groupCoord) close() {
	c.closed = true
	_ = c.c.Close()
	waits := c.waits
	c.waits = nil
	for _, w := range waits {
		w.done(kerr.NotLeaderForPartition)
	}
}

// settle answers the commits whose fate is known: committed (the high
// watermark passed them at this leadership), or timed out.
func (c *groupCoord) settle() {
	var keep []*offsetsWait
	for _, w := range c.waits {
		switch {
		case c.r.p.HighWatermark() >= w.end:
			w.done(nil)
		case c.b.s.now >= w.deadline:
			w.done(kerr.RequestTimedOut)
		default:
			keep = append(keep, w)
		}
	}
	c.waits = keep
}

// settleGroups moves the group coordinators on after an event here.
func (b *broker) settleGroups() {
	b.groupCoordinators()
	for _, i := range slices.Sorted(maps.Keys(b.groupCoords)) {
		if c := b.groupCoords[i]; c != nil && b.up && !c.closed {
			c.settle()
		}
	}
}

// groupPartitionOf is the partition of __consumer_offsets that owns a
// group: the simulator has one group, on partition 0 (the broker hashes
// the id, FindCoordinator).
func groupPartitionOf(string) int32 { return 0 }

// groupCoordFor is the coordinator of group here, or the code to answer.
func (b *broker) groupCoordFor(id string) (*groupCoord, int16) {
	if _, ok := b.store.Image().Topic(offsetsTopic); !ok {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	c := b.groupCoords[groupPartitionOf(id)]
	if c == nil || c.closed {
		return nil, kerr.NotCoordinator.Code
	}
	return c, 0
}

// serveTxnOffsetCommit is TxnOffsetCommit at the group's coordinator, as
// the broker's handler: the group's partition checked with the
// transaction coordinator (added to the transaction when add: v5, the
// second transaction version), then committed in the transaction. reply
// gets the partition's code (the simulated copiers commit one).
func (b *broker) serveTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, add bool, reply func(int16)) {
	if _, code := b.groupCoordFor(req.Group); code != 0 {
		reply(code)
		return
	}
	pr := txn.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch, Fenced: kerr.ProducerFenced.Code}
	tp := txn.TopicPartition{Topic: offsetsTopic, Partition: groupPartitionOf(req.Group)}
	b.verifyTxn(req.TransactionalID, pr, tp, add, func(code int16) {
		if code != 0 {
			reply(code)
			return
		}
		c, code := b.groupCoordFor(req.Group)
		if c == nil {
			reply(code)
			return
		}
		end, answer := c.c.StartTxnOffsetCommit(req)
		done := func(err error) { reply(answer(err)[0].Partitions[0].ErrorCode) }
		b.s.tracef("b%d %s commits offsets of %q in its transaction: end %d", b.id, req.TransactionalID, req.Group, end)
		if end == 0 {
			done(nil)
			return
		}
		c.waits = append(c.waits, &offsetsWait{end: end, deadline: b.s.now + coordWriteMs, done: done})
		b.later(coordWriteMs, "offsets-wait", b.settle)
		b.settle()
	})
}

// serveOffsetFetch is OffsetFetch v7 with RequireStable, for one
// partition, as the broker's handler: the coordinator's read barrier
// (StartReadBarrier, answered once the high watermark passes it at the
// same leadership), then what fetchOffset reads.
func (b *broker) serveOffsetFetch(groupID, topic string, part int32, reply func(offset int64, metadata string, code int16)) {
	c, code := b.groupCoordFor(groupID)
	if c == nil {
		reply(-1, "", code)
		return
	}
	end, err := c.c.StartReadBarrier(groupID, b.s.time())
	if err != nil {
		reply(-1, "", coordlog.ErrorCode(err))
		return
	}
	c.waits = append(c.waits, &offsetsWait{end: end, deadline: b.s.now + coordWriteMs, done: func(err error) {
		if err != nil {
			reply(-1, "", coordlog.ErrorCode(err))
			return
		}
		reply(c.fetchOffset(groupID, topic, part))
	}})
	b.later(coordWriteMs, "offsets-wait", b.settle)
	b.settle()
}

// fetchOffset is what the coordinator answers now to an OffsetFetch v7
// with RequireStable for one partition: its committed offset and
// metadata, and the partition's code (UNSTABLE_OFFSET_COMMIT while a
// transaction has an offset pending for it).
func (c *groupCoord) fetchOffset(groupID, topic string, part int32) (int64, string, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable, req.Group = 7, true, groupID
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := c.c.OffsetFetchNow(req)
	if resp.ErrorCode != 0 {
		return -1, "", resp.ErrorCode
	}
	p := resp.Topics[0].Partitions[0]
	md := ""
	if p.Metadata != nil {
		md = *p.Metadata
	}
	return p.Offset, md, p.ErrorCode
}

// offsetsMarker appends a marker to a partition of __consumer_offsets
// through its group coordinator here: the end of the append, and what to
// do once it is committed (the offsets of the transaction become the
// group's, or are dropped).
func (b *broker) offsetsMarker(r *replica, pid int64, commit bool, appendMarker func() (int64, error)) (int64, func(), error) {
	c := b.groupCoords[r.p.Index()]
	if c == nil || c.closed || c.r != r {
		return 0, nil, kerr.NotLeaderForPartition
	}
	end, err := c.c.StartWriteMarker(pid, appendMarker)
	if err != nil {
		return 0, nil, err
	}
	return end, func() {
		if !c.closed {
			c.c.MarkerDurable(pid, commit, end)
		}
	}, nil
}
