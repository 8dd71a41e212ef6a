package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	groupOK := c.ValidGroupID(req.Group, true)
	for _, t := range req.Topics {
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
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var commits []Commit
	var codes []*int16
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if rp.ErrorCode != 0 {
				continue
			}
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			commits = append(commits, Commit{
				TopicPartition: TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:         Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata)},
			})
			codes = append(codes, &rp.ErrorCode)
		}
	}
	if len(commits) == 0 {
		return func() *kmsg.OffsetCommitResponse { return resp }
	}
	wait := c.commit(req, commits)
	return func() *kmsg.OffsetCommitResponse {
		code := wait()
		for _, p := range codes {
			*p = code
		}
		return resp
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
		code = storeErrorCode(appendErr)
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
			return storeErrorCode(err)
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
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	groupOK := c.ValidGroupID(req.Group, true)
	if !groupOK && req.Version >= 2 {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var all []Commit
	found := map[TopicPartition]Offset{}
	if groupOK {
		c.step(req.Group, false, func(g *Group, _ time.Time) {
			if req.Topics == nil {
				all = g.AllCommitted()
				return
			}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					tp := TopicPartition{Topic: t.Topic, Partition: p}
					if o, ok := g.Committed(tp); ok {
						found[tp] = o
					}
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
			rt.Partitions = append(rt.Partitions, fetchPartition(cm.Partition, cm.Offset, true, 0))
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
			o, ok := found[TopicPartition{Topic: t.Topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, fetchPartition(p, o, ok, code))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
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
