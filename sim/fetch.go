package sim

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/replication"
)

// Replication between brokers: a follower's Fetch (with its replica id and
// broker epoch: the replication package's FetchRequest) goes to its leader,
// which answers with the FetchAnswer its Leader decides, or parks the fetch
// until its durable end moves (Kafka's long poll); the answer carries the
// stored batch bytes as they are.

const (
	fetchTimeoutMs = 300
	fetchMaxWaitMs = 100
	fetchMaxBytes  = 16 << 10
)

type fetchReq struct {
	tp  tp
	req replication.FetchRequest
}

type fetchResp struct {
	err       error
	hw        int64
	logStart  int64
	diverging *replication.EpochEnd
	batches   [][]byte
}

type parkedFetch struct {
	from     int64
	deadline int64
	reply    func(fetchResp)
}

func (r *replica) maybeFetch() {
	f := r.follower
	if f == nil || r.fetchBusy || r.b.s.now < r.backoff || r.closed {
		return
	}
	req, ok := f.NextFetch()
	if !ok {
		return
	}

	r.fetchBusy = true
	s, b := r.b.s, r.b
	gen, role := b.gen, r.role
	s.rpc(b.id, req.Leader, "fetch", fetchTimeoutMs, func(reply func(any)) {
		s.brokers[req.Leader-1].serveFetch(fetchReq{tp: r.tp, req: req}, func(fr fetchResp) { reply(fr) })
	}, func(resp any) {
		if !b.up || b.gen != gen || r.role != role {
			return
		}
		r.fetchBusy = false
		fr, ok := resp.(fetchResp)
		if !ok {
			r.maybeFetch() // timed out: fetch again
			return
		}
		r.fetched(f, req, fr)
		b.process()
	})
}

// fetched hands the leader's answer to the follower that asked.
func (r *replica) fetched(f *replication.Follower, req replication.FetchRequest, fr fetchResp) {
	ev := replication.FetchResponse{
		FetchOffset: req.FetchOffset, Err: fr.err, HighWatermark: fr.hw, LogStartOffset: fr.logStart,
		DivergingEpoch: fr.diverging,
	}
	data := map[int64][]byte{}
	for _, raw := range fr.batches {
		bi := info(raw)
		ev.Batches = append(ev.Batches, bi)
		data[bi.BaseOffset] = raw
	}
	r.followerActions(f, f.Step(ev), data)
	if r.follower == f {
		r.maybeFetch()
	}
}

// serveFetch answers a follower's fetch at this broker.
func (b *broker) serveFetch(fr fetchReq, reply func(fetchResp)) {
	r := b.replicas[fr.tp]
	if r == nil || r.leader == nil {
		reply(fetchResp{err: kerr.NotLeaderForPartition})
		return
	}
	req := fr.req
	acts := r.leader.Step(replication.FollowerFetch{
		Replica: req.Replica, BrokerEpoch: req.BrokerEpoch, CurrentLeaderEpoch: req.CurrentLeaderEpoch,
		FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch, Now: b.s.time(),
	})
	ans := acts[0].(replication.FetchAnswer)
	r.leaderActions(r.leader, acts[1:])
	if ans.Err != nil || ans.Diverging != nil {
		reply(fetchResp{err: ans.Err, diverging: ans.Diverging, hw: ans.HighWatermark, logStart: ans.LogStartOffset})
		return
	}
	if ans.From >= ans.To {
		r.parked = append(r.parked, &parkedFetch{from: ans.From, deadline: b.s.now + fetchMaxWaitMs, reply: reply})
		b.later(fetchMaxWaitMs, "fetch-wait", r.wakeParked)
		return
	}
	reply(r.serve(ans.From))
	b.process()
}

// serve reads from offset up to the durable end.
func (r *replica) serve(from int64) fetchResp {
	resp := fetchResp{hw: r.hw, logStart: r.log.StartOffset()}
	if r.leader != nil {
		resp.hw = r.leader.HW()
	}
	bs, err := r.log.Read(from, fetchMaxBytes)
	if err != nil {
		resp.err = kerr.OffsetOutOfRange
		return resp
	}
	for _, bt := range bs {
		if bt.NextOffset() > r.durable {
			break
		}
		resp.batches = append(resp.batches, bt.Data)
	}
	return resp
}

// wakeParked answers the parked fetches that have data or waited enough.
func (r *replica) wakeParked() {
	keep := r.parked[:0]
	for _, p := range r.parked {
		if r.durable > p.from || r.b.s.now >= p.deadline {
			p.reply(r.serve(p.from))
			continue
		}
		keep = append(keep, p)
	}
	r.parked = keep
}

// alterPartition sends a Leader's ISR proposal to the controller and hands
// the answer to the same Leader.
func (r *replica) alterPartition(l *replication.Leader, p replication.ProposeISR) {
	b := r.b
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = r.tp.topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = r.tp.part, p.LeaderEpoch, p.PartitionEpoch
	for _, m := range p.NewISR {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m.ID, BrokerEpoch: m.BrokerEpoch})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	gen := b.gen
	b.s.callController(b.id, b.controller(), req, func(resp kmsg.Response) {
		if !b.up || b.gen != gen || r.leader != l {
			return
		}
		res := replication.AlterPartitionResult{Seq: p.Seq, Now: b.s.time(), Err: errNoAnswer}
		if ar, ok := resp.(*kmsg.AlterPartitionResponse); ok {
			res.Err = kerr.ErrorForCode(ar.ErrorCode)
			for _, t := range ar.Topics {
				for _, sp := range t.Partitions {
					if sp.Partition == r.tp.part && res.Err == nil {
						res.Err = kerr.ErrorForCode(sp.ErrorCode)
						res.LeaderEpoch, res.PartitionEpoch, res.ISR = sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR
					}
				}
			}
		}
		r.leaderActions(l, l.Step(res))
		b.process()
	})
}

var errNoAnswer = errors.New("sim: no answer from the controller")
