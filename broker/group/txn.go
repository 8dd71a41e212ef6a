package group

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
)

// Offsets committed in a transaction (TxnOffsetCommit) are written to
// __consumer_offsets inside the producer's transaction: a transactional
// batch with the producer's id and epoch. They stay pending, invisible to
// OffsetFetch, until the marker that ends the transaction reaches this
// partition (WriteMarker): a commit makes them the group's offsets, as of
// the marker's place in the log; an abort drops them. Replay does the
// same with the batches and markers it reads. While a group has pending
// offsets for a partition, an OffsetFetch with RequireStable gets
// UNSTABLE_OFFSET_COMMIT for it (the client retries), and compaction
// keeps the log from the first pending batch on.

// TxnOffsetCommit serves TxnOffsetCommit v0-4: the answer's topics. Its
// fencing is Kafka's: a request naming a member (v3+) must be from a
// current member of the current generation; one with none is accepted
// whatever the group's state. It is StartTxnOffsetCommit, the wait until
// the log is durable, and the answer.
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) []kmsg.OffsetCommitResponseTopic {
	end, answer := c.StartTxnOffsetCommit(req)
	var err error
	if end > 0 {
		err = c.cfg.Log.WaitDurable(c.ctx, end)
	}
	return answer(err)
}

// StartTxnOffsetCommit is TxnOffsetCommit as two events, for a driver
// that does not block (the simulator): the commit is fenced and appended
// now; the caller waits until the log is durable through end (none to
// wait for when end is 0), then calls answer with the wait's error. The
// offsets stay pending whatever the wait says: the transaction's marker
// decides them.
func (c *Coordinator) StartTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) (end int64, answer func(waitErr error) []kmsg.OffsetCommitResponseTopic) {
	topics := make([]kmsg.OffsetCommitRequestTopic, len(req.Topics))
	for i, t := range req.Topics {
		topics[i].Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
			topics[i].Partitions = append(topics[i].Partitions, rp)
		}
	}
	out, commits := c.checkCommits(req.Group, req.Version >= 2, topics)
	if len(commits) == 0 {
		return 0, func(error) []kmsg.OffsetCommitResponseTopic { return out }
	}
	end, code := c.txnCommit(req, commits)
	return end, func(err error) []kmsg.OffsetCommitResponseTopic {
		if code == 0 && err != nil {
			code = coordlog.ErrorCode(err)
		}
		setCodes(out, code)
		return out
	}
}

// txnCommit fences and appends commits: the end of the append to wait
// for, or the code to answer at once.
func (c *Coordinator) txnCommit(req *kmsg.TxnOffsetCommitRequest, commits []Commit) (int64, int16) {
	pr := batch.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch}
	var (
		code      int16
		end       int64
		appendErr error
	)
	e := c.step(req.Group, true, func(g *Group, now time.Time) {
		if g.state == Dead {
			code = kerr.CoordinatorNotAvailable.Code
			return
		}
		if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
			if code = g.checkMember(req.MemberID, deref(req.InstanceID), req.Generation); code != 0 {
				return
			}
		}
		recs := make([]Record, len(commits))
		for i := range commits {
			commits[i].CommitTime = now
			recs[i] = Record{Key: offsetKey(g.ID(), commits[i].TopicPartition), Value: offsetValue(commits[i].Offset)}
		}
		end, appendErr = c.appendTxn(recs, pr, now)
		if appendErr == nil {
			g.txnPending(pr.ID, commits)
			if c.cfg.mut.has(mutTxnOffsetsAtOnce) {
				g.CommitDone(commits, end-1, true)
			}
			c.mu.Lock()
			if c.txnGroups[pr.ID] == nil {
				c.txnGroups[pr.ID] = map[string]struct{}{}
			}
			c.txnGroups[pr.ID][g.ID()] = struct{}{}
			c.mu.Unlock()
		}
	})
	switch {
	case e == nil:
		return 0, kerr.CoordinatorNotAvailable.Code
	case appendErr != nil:
		c.cfg.Logger.Warn("group: transactional offset commit append failed", "group", req.Group, "err", appendErr)
		return 0, coordlog.ErrorCode(appendErr)
	case code != 0:
		return 0, code
	}
	return end, 0
}

// appendTxn appends recs as producer pr's transactional batch; unlike
// append, the keys' live values do not change until the marker, and the
// log is pinned from the batch on until then.
func (c *Coordinator) appendTxn(recs []Record, pr batch.Producer, now time.Time) (int64, error) {
	return c.lg.AppendPinned(pr.ID, batch.EncodeTxn(kvs(recs), pr, now), len(recs))
}

// WriteMarker ends producer pid's transaction in this partition: appendMarker
// appends the marker (the broker's partition does) and returns the offset
// just past it; once the marker is durable, the offsets committed in the
// transaction become the groups' (commit) or are dropped (abort). It is
// StartWriteMarker, the wait, and MarkerDurable.
func (c *Coordinator) WriteMarker(ctx context.Context, pid int64, commit bool, appendMarker func() (int64, error)) (int64, error) {
	end, err := c.StartWriteMarker(pid, appendMarker)
	if err != nil {
		return 0, err
	}
	if err := c.cfg.Log.WaitDurable(ctx, end); err != nil {
		return end, err
	}
	c.MarkerDurable(pid, commit, end)
	return end, nil
}

// StartWriteMarker is WriteMarker's first event, for a driver that does
// not block: the marker appended, in the coordinator's order of appends.
// Once the log is durable through the end it returns, the driver calls
// MarkerDurable; if that wait fails it calls nothing (the transaction
// coordinator writes the marker again).
func (c *Coordinator) StartWriteMarker(pid int64, appendMarker func() (int64, error)) (int64, error) {
	return c.lg.AppendOther(pid, appendMarker)
}

// MarkerDurable is WriteMarker's second event: the marker that ends
// producer pid's transaction, appended by StartWriteMarker and ending
// just before end, is durable.
func (c *Coordinator) MarkerDurable(pid int64, commit bool, end int64) {
	c.txnEnded(pid, commit, end-1)
}

// txnEnded applies the end of producer pid's transaction, whose marker is
// at pos, to every group with offsets pending in it.
func (c *Coordinator) txnEnded(pid int64, commit bool, pos int64) {
	c.mu.Lock()
	ids := slices.Sorted(maps.Keys(c.txnGroups[pid]))
	delete(c.txnGroups, pid)
	c.mu.Unlock()
	for _, id := range ids {
		c.step(id, false, func(g *Group, _ time.Time) {
			applied := g.txnEnded(pid, commit, pos)
			if len(applied) == 0 {
				return
			}
			live := make([]batch.KV, len(applied))
			for i, cm := range applied {
				live[i] = batch.KV{Key: offsetKey(g.ID(), cm.TopicPartition), Value: offsetValue(cm.Offset)}
			}
			c.lg.SetLive(live)
		})
	}
}

// txnPending holds commits, pending in producer pid's transaction.
func (g *Group) txnPending(pid int64, commits []Commit) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[TopicPartition]Offset{}
	}
	m := g.txnOffsets[pid]
	if m == nil {
		m = map[TopicPartition]Offset{}
		g.txnOffsets[pid] = m
	}
	for _, cm := range commits {
		m[cm.TopicPartition] = cm.Offset
	}
}

// txnEnded makes producer pid's pending offsets the group's, as of the
// marker at pos, if commit (unless a later record of a partition already
// decided it), or drops them; it returns those it applied.
func (g *Group) txnEnded(pid int64, commit bool, pos int64) []Commit {
	pending := g.txnOffsets[pid]
	delete(g.txnOffsets, pid)
	if !commit || g.state == Dead {
		return nil
	}
	var out []Commit
	for tp, o := range pending {
		if old, ok := g.offsets[tp]; ok && old.pos > pos {
			continue
		}
		o.pos = pos
		g.offsets[tp] = o
		out = append(out, Commit{TopicPartition: tp, Offset: o})
	}
	slices.SortFunc(out, func(a, b Commit) int { return compareTP(a.TopicPartition, b.TopicPartition) })
	return out
}

// Unstable reports whether a transaction has offsets pending for tp.
func (g *Group) Unstable(tp TopicPartition) bool {
	for _, m := range g.txnOffsets {
		if _, ok := m[tp]; ok {
			return true
		}
	}
	return false
}
