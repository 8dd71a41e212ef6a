package group

import (
	"cmp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/coordlog"
)

// OffsetCommit serves OffsetCommit v2-8. Every valid partition of the
// request goes into one batch; the answer comes once it is durable, and
// only then do the offsets become visible to OffsetFetch.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return c.StartOffsetCommit(req)()
}

// StartOffsetCommit is OffsetCommit in two phases: the commit is fenced and
// appended to the log now, so commits from one connection reach the log in
// the order it sent them (the latest one wins); the returned function waits
// until it is durable and answers. The wait is not cancellable: a commit
// once appended is applied or failed by the log, never abandoned.
func (c *Coordinator) StartOffsetCommit(req *kmsg.OffsetCommitRequest) func() *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var commits []Commit
	resp.Topics, commits = c.checkCommits(req.Group, req.Version >= 6, req.Topics)
	if len(commits) == 0 {
		return func() *kmsg.OffsetCommitResponse { return resp }
	}
	wait := c.commit(req, commits)
	return func() *kmsg.OffsetCommitResponse {
		setCodes(resp.Topics, wait())
		return resp
	}
}

// checkCommits checks each partition of an offset commit of group: the
// answer's topics, with the codes of the partitions refused, and the
// commits of the others. epochs: the request carries leader epochs.
func (c *Coordinator) checkCommits(group string, epochs bool, topics []kmsg.OffsetCommitRequestTopic) ([]kmsg.OffsetCommitResponseTopic, []Commit) {
	groupOK := c.ValidGroupID(group, true)
	var out []kmsg.OffsetCommitResponseTopic
	var commits []Commit
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !groupOK:
				rp.ErrorCode = kerr.InvalidGroupID.Code
			case !c.cfg.PartitionExists(t.Topic, p.Partition):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case len(deref(p.Metadata)) > c.cfg.MaxOffsetMetadataBytes:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				epoch := int32(-1)
				if epochs {
					epoch = p.LeaderEpoch
				}
				commits = append(commits, Commit{
					TopicPartition: TopicPartition{Topic: t.Topic, Partition: p.Partition},
					Offset:         Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata)},
				})
				rp.ErrorCode = -1 // to be answered with the commit's code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, commits
}

// setCodes answers every partition checkCommits left to the commit with
// code.
func setCodes(topics []kmsg.OffsetCommitResponseTopic, code int16) {
	for i := range topics {
		for j := range topics[i].Partitions {
			if p := &topics[i].Partitions[j]; p.ErrorCode == -1 {
				p.ErrorCode = code
			}
		}
	}
}

// commit fences and appends commits, and returns the wait that makes them
// visible once durable and says the code for all of them.
func (c *Coordinator) commit(req *kmsg.OffsetCommitRequest, commits []Commit) func() int16 {
	var (
		code      int16
		end       int64
		appendErr error
	)
	// Kafka creates a group for a commit with a negative generation: a
	// client that assigns partitions itself and only stores offsets here.
	e := c.step(req.Group, req.Generation < 0, func(g *Group, now time.Time) {
		code = g.CheckCommit(now, req.MemberID, deref(req.InstanceID), req.Generation)
		if code != 0 {
			return
		}
		recs := make([]Record, len(commits))
		tps := make([]TopicPartition, len(commits))
		for i := range commits {
			commits[i].CommitTime = now
			tps[i] = commits[i].TopicPartition
			recs[i] = Record{Key: offsetKey(g.ID(), tps[i]), Value: offsetValue(commits[i].Offset)}
		}
		// Appended under the group's lock: two commits of one group reach
		// the log in the order they were fenced.
		end, appendErr = c.append(recs, now)
		if appendErr == nil {
			g.CommitStarted(tps)
		}
	})
	switch {
	case e == nil:
		code = c.missingGroupCode(kerr.IllegalGeneration.Code)
	case appendErr != nil:
		c.cfg.Logger.Warn("group: offset commit append failed", "group", req.Group, "err", appendErr)
		code = coordlog.ErrorCode(appendErr)
	}
	if e == nil || code != 0 {
		return func() int16 { return code }
	}
	return func() int16 {
		// The coordinator's context, not the request's: once appended, the
		// commit must be applied or failed consistently with the log.
		err := c.cfg.Log.WaitDurable(c.ctx, end)
		c.stepOn(e, func(g *Group, _ time.Time) { g.CommitDone(commits, end, err == nil) })
		if err != nil {
			c.cfg.Logger.Warn("group: offset commit not durable", "group", req.Group, "err", err)
			return coordlog.ErrorCode(err)
		}
		return 0
	}
}

// stepOn is step on a known entry, even a Dead one.
func (c *Coordinator) stepOn(e *entry, fn func(g *Group, now time.Time)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.cfg.Clock.Now()
	fn(e.g, now)
	c.finish(e, now)
}

// OffsetFetch serves OffsetFetch v1-7 (one group; null topics, v2+, means
// every committed partition). A partition with no commit reads offset -1.
// With RequireStable it answers after a read barrier (StartReadBarrier).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	if req.RequireStable && c.ValidGroupID(req.Group, true) {
		end, err := c.StartReadBarrier(req.Group, c.cfg.Clock.Now())
		if err == nil {
			err = c.cfg.Log.WaitDurable(c.ctx, end)
		}
		if err != nil {
			return OffsetFetchFailed(req, coordlog.ErrorCode(err))
		}
	}
	return c.OffsetFetchNow(req)
}

// StartReadBarrier appends a record that changes nothing (the tombstone of
// an offset key no commit has: the empty topic name, invalid in Kafka) and
// returns the end to wait for. Once that end is committed, this
// coordinator still led its partition after the request came, so what it
// knows of the group's offsets is what any later leader knows. Without it,
// a coordinator cut off from the controller, not yet told its partition
// has another leader, answers from what it had: a consume-transform-
// produce client that reads its committed offsets there (RequireStable)
// starts again from an older offset and copies records twice (found by
// the simulator's copiers, seed 36607). Kafka answers from memory; the
// barrier costs one replicated append per OffsetFetch with RequireStable,
// which clients send when they take partitions on.
func (c *Coordinator) StartReadBarrier(group string, now time.Time) (int64, error) {
	return c.append([]Record{{Key: offsetKey(group, TopicPartition{Topic: "", Partition: -1})}}, now)
}

// OffsetFetchFailed is OffsetFetch's answer when it cannot be served: code
// at the top level (v2+) and for every partition named.
func OffsetFetchFailed(req *kmsg.OffsetFetchRequest, code int16) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.ErrorCode = code
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			sp.Offset, sp.LeaderEpoch = -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// OffsetFetchNow answers OffsetFetch from what the coordinator knows now,
// without a barrier: for a driver that waited for StartReadBarrier's end
// itself (the simulator), or a request without RequireStable.
func (c *Coordinator) OffsetFetchNow(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	groupOK := c.ValidGroupID(req.Group, true)
	if !groupOK && req.Version >= 2 {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var all []Commit
	found := map[TopicPartition]Offset{}
	unstable := map[TopicPartition]bool{}
	if groupOK {
		c.step(req.Group, false, func(g *Group, _ time.Time) {
			if req.Topics == nil {
				all = g.AllCommitted()
				for _, cm := range all {
					unstable[cm.TopicPartition] = req.RequireStable && g.Unstable(cm.TopicPartition)
				}
				return
			}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					tp := TopicPartition{Topic: t.Topic, Partition: p}
					if o, ok := g.Committed(tp); ok {
						found[tp] = o
					}
					unstable[tp] = req.RequireStable && g.Unstable(tp)
				}
			}
		})
	}
	if req.Topics == nil {
		for _, cm := range all {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != cm.Topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = cm.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, fetchPartition(cm.Partition, cm.Offset, true, unstableCode(unstable[cm.TopicPartition])))
		}
		return resp
	}
	code := int16(0)
	if !groupOK {
		code = kerr.InvalidGroupID.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: p}
			o, ok := found[tp]
			rt.Partitions = append(rt.Partitions, fetchPartition(p, o, ok, cmp.Or(code, unstableCode(unstable[tp]))))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// unstableCode is a partition's code in an OffsetFetch with RequireStable:
// UNSTABLE_OFFSET_COMMIT while a transaction has an offset pending for it.
func unstableCode(unstable bool) int16 {
	if unstable {
		return kerr.UnstableOffsetCommit.Code
	}
	return 0
}

func fetchPartition(p int32, o Offset, ok bool, code int16) kmsg.OffsetFetchResponseTopicPartition {
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	rp.Partition = p
	rp.ErrorCode = code
	rp.Offset, rp.LeaderEpoch = -1, -1
	md := ""
	if ok {
		rp.Offset, rp.LeaderEpoch, md = o.Offset, o.LeaderEpoch, o.Metadata
	}
	rp.Metadata = &md
	return rp
}
