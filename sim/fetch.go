package sim

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// Replication between brokers, as the broker's fetcher and Fetch handler
// do it: a follower's partition says what to fetch (Partition.NextFetch:
// its replica id, broker epoch, fetch offset and last fetched epoch), the
// request goes to its leader, whose partition answers it
// (Partition.ServeFollower) or, with nothing to send yet, parks it until
// its durable end passes the fetch offset or the role changes (Kafka's long
// poll; Partition.FollowerDataReady), and the answer goes back to the
// follower's partition (Partition.HandleFetch), which appends, truncates or
// backs off. An answer that arrives after the follower's role changed is
// still handed to it, as the fetcher does; the partition judges it.

const (
	fetchTimeoutMs = 300
	fetchMaxWaitMs = 100
	fetchMaxBytes  = 16 << 10
	fetchBackoffMs = 100 // replica.fetch.backoff.ms
)

type fetchResp struct {
	err       error
	hw        int64
	logStart  int64
	diverging *replication.EpochEnd
	records   []byte   // a follower's fetch: the stored batches, concatenated
	batches   [][]byte // a consumer's: the same, one by one
}

type parkedFetch struct {
	req      replication.FollowerFetch
	deadline int64
	reply    func(fetchResp)
}

func (r *replica) maybeFetch() {
	if r.fetchBusy || r.b.s.now < r.backoff {
		return
	}
	req, ok := r.p.NextFetch()
	if !ok {
		return
	}
	r.fetchBusy = true
	s, b := r.b.s, r.b
	gen, role := b.gen, r.fetchRole
	ff := replication.FollowerFetch{
		Replica: req.Replica, BrokerEpoch: req.BrokerEpoch, CurrentLeaderEpoch: req.CurrentLeaderEpoch,
		FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch,
	}
	s.rpc(b.id, req.Leader, "fetch", fetchTimeoutMs, func(reply func(any)) {
		s.brokers[req.Leader-1].serveFetch(r.tp, ff, func(fr fetchResp) { reply(fr) })
	}, func(resp any) {
		if !b.up || b.gen != gen || !r.current() {
			return
		}
		if r.fetchRole == role {
			r.fetchBusy = false
		}
		fr, ok := resp.(fetchResp)
		if !ok {
			if r.fetchRole == role {
				r.backoff = s.now + fetchBackoffMs // the request failed: the fetcher pauses
			}
			b.settle()
			return
		}
		r.fetched(req, fr)
		b.settle()
	})
}

// fetched hands the leader's answer to the follower's partition.
func (r *replica) fetched(req replication.FetchRequest, fr fetchResp) {
	err := r.p.HandleFetch(partition.FetchResult{
		Request: req, Err: fr.err, HighWatermark: fr.hw, LogStartOffset: fr.logStart,
		Diverging: fr.diverging, Records: fr.records,
	})
	r.observe()
	if err != nil {
		if !partition.IsBackoff(err) && !partition.IsNeedMetadata(err) {
			r.b.s.tracef("b%d %s: applying a fetch: %v", r.b.id, r.tp, err)
		}
		r.backoff = r.b.s.now + fetchBackoffMs
	}
}

// serveFetch answers a follower's fetch at this broker.
func (b *broker) serveFetch(k tp, ff replication.FollowerFetch, reply func(fetchResp)) {
	r := b.replicas[k]
	if r == nil {
		reply(fetchResp{err: kerr.NotLeaderForPartition})
		return
	}
	p := &parkedFetch{req: ff, deadline: b.s.now + fetchMaxWaitMs, reply: reply}
	if !r.serve(p, false) {
		r.parked = append(r.parked, p)
		b.later(fetchMaxWaitMs, "fetch-wait", b.settle)
	}
	b.settle()
}

// serve answers p, unless it has nothing to send and may wait (park): then
// it reports false.
func (r *replica) serve(p *parkedFetch, last bool) bool {
	p.req.Now = r.b.s.time()
	rd, err := r.p.ServeFollower(p.req, fetchMaxBytes)
	r.observe()
	if err == nil && rd.Diverging == nil && len(rd.Records) == 0 && !last {
		return false
	}
	resp := fetchResp{hw: rd.HighWatermark, logStart: rd.LogStartOffset, diverging: rd.Diverging, records: rd.Records}
	if err != nil {
		resp.err = kafkaErr(err)
	}
	p.reply(resp)
	return true
}

// wakeParked answers the parked fetches that have data or waited enough.
func (r *replica) wakeParked() {
	if len(r.parked) == 0 {
		return
	}
	var keep []*parkedFetch
	for _, p := range r.parked {
		if r.p.FollowerDataReady(p.req.FetchOffset) || r.b.s.now >= p.deadline {
			r.serve(p, true)
			continue
		}
		keep = append(keep, p)
	}
	r.parked = keep
}

// kafkaErr is the Kafka error an error wraps, as the wire carries it (an
// error code); an error without one is UNKNOWN_SERVER_ERROR.
func kafkaErr(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// proposeISR is the partitions' ProposeISR hook, as the broker's: the
// leader's ISR change goes to the controller as an AlterPartition (v3:
// each member with the broker epoch its fetch carried) through the
// simulated network, and its answer back to the Leader that made it. It
// runs under the partition's lock and only sends.
func (b *broker) proposeISR(p *partition.Partition, prop replication.ProposeISR) {
	pgen, gen := p.ProposalGen(), b.gen
	k := tp{p.Key().TopicID, p.Key().Index}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = k.topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = k.part, prop.LeaderEpoch, prop.PartitionEpoch
	for _, m := range prop.NewISR {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m.ID, BrokerEpoch: m.BrokerEpoch})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	b.s.tracef("b%d %s proposes isr %v at partition epoch %d", b.id, k, prop.NewISR, prop.PartitionEpoch)
	b.s.callController(b.id, b.controller(), req, func(resp kmsg.Response) {
		r := b.replicas[k]
		if !b.up || b.gen != gen || r == nil || r.p != p {
			return
		}
		res := replication.AlterPartitionResult{Seq: prop.Seq, Now: b.s.time(), Err: errNoAnswer}
		if ar, ok := resp.(*kmsg.AlterPartitionResponse); ok {
			res.Err = kerr.ErrorForCode(ar.ErrorCode)
			if res.Err == nil {
				res.Err = kerr.UnknownServerError
				for _, t := range ar.Topics {
					for _, sp := range t.Partitions {
						if sp.Partition == k.part {
							res.Err = kerr.ErrorForCode(sp.ErrorCode)
							res.LeaderEpoch, res.PartitionEpoch, res.ISR = sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR
						}
					}
				}
			}
		}
		b.s.tracef("b%d %s isr proposal answered: %v %v at partition epoch %d", b.id, k, res.Err, res.ISR, res.PartitionEpoch)
		p.AlterPartitionResult(pgen, res)
		b.process()
		b.settle()
	})
}

var errNoAnswer = errors.New("sim: no answer from the controller")

// drain answers what waits on a partition that was just removed.
func (r *replica) drain() {
	r.resolveWaiters()
	r.wakeParked()
}

func (r *replica) String() string { return fmt.Sprintf("b%d %s", r.b.id, r.tp) }
