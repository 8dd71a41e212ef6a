package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/partition"
)

// The produce path, as the broker's: an acks=all produce is refused with
// NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas
// (Partition.CheckProduce); the partition validates the batch, checks the
// idempotent producer's sequence (a duplicate is answered with the offsets
// it was stored at), assigns offsets and the leader epoch and appends
// (Partition.Append); the answer waits until the batch is durable here
// (acks=1) or below the high watermark (acks=all), or the leadership it
// was appended under ends (Partition.AwaitAck, polled after every event
// at this broker where the broker blocks).

const produceWaitMs = 1500

type produceReq struct {
	tp   tp
	acks int16
	data []byte
}

type produceResp struct {
	err        error
	base, last int64
	epoch      int32 // the acknowledging leader's epoch, for the checkers (not on the wire)
}

type waiter struct {
	base, last int64
	epoch      int32 // of the leadership the wait is under
	ack        partition.AckWait
	deadline   int64
	reply      func(produceResp)
}

func (b *broker) serveProduce(pr produceReq, reply func(produceResp)) {
	r := b.replicas[pr.tp]
	if r == nil {
		reply(produceResp{err: kerr.NotLeaderForPartition})
		return
	}
	if pr.acks == -1 {
		if err := r.p.CheckProduce(-1); err != nil {
			reply(produceResp{err: kafkaErr(err)})
			return
		}
	}
	// The network may deliver the same bytes twice; Append patches them.
	app, err := r.p.Append(append([]byte(nil), pr.data...))
	r.observe()
	if err != nil {
		reply(produceResp{err: kafkaErr(err)})
		b.settle()
		return
	}
	r.waiters = append(r.waiters, &waiter{
		base: app.BaseOffset, last: app.LastOffset, epoch: r.p.Role().LeaderEpoch, ack: r.p.AwaitAck(pr.acks, app.LastOffset+1),
		deadline: b.s.now + produceWaitMs, reply: reply,
	})
	b.later(produceWaitMs, "produce-wait", b.settle)
	b.settle()
}

// resolveWaiters answers the producers whose wait is over.
func (r *replica) resolveWaiters() {
	if len(r.waiters) == 0 {
		return
	}
	var keep []*waiter
	for _, w := range r.waiters {
		done, err := w.ack.Poll()
		switch {
		case done && err == nil:
			w.reply(produceResp{base: w.base, last: w.last, epoch: w.epoch})
		case done:
			w.reply(produceResp{err: kafkaErr(err)})
		case r.b.s.now >= w.deadline:
			w.reply(produceResp{err: kerr.RequestTimedOut})
		default:
			keep = append(keep, w)
		}
	}
	r.waiters = keep
}

// consumeResp is the answer to a consumer's fetch.
type consumeResp struct {
	err      error
	hw       int64
	logStart int64
	batches  [][]byte // the stored batches, one by one
}

// serveConsume answers a consumer's fetch, as the broker's Fetch handler:
// the leader's partition reads whole batches from offset, below the high
// watermark only.
func (b *broker) serveConsume(t tp, offset int64) consumeResp {
	r := b.replicas[t]
	if r == nil || !r.p.Role().Local {
		return consumeResp{err: kerr.NotLeaderForPartition}
	}
	rd, err := r.p.Read(offset, fetchMaxBytes)
	resp := consumeResp{hw: rd.HighWatermark, logStart: rd.LogStartOffset}
	if err != nil {
		resp.err = kafkaErr(err)
		resp.hw, resp.logStart = r.p.HighWatermark(), r.p.StartOffset()
		return resp
	}
	if len(rd.Records) == 0 {
		return resp // at the high watermark
	}
	bs, err := batch.Split(rd.Records)
	if err != nil {
		b.s.violate("corrupt-read", "b%d %s: a read at %d does not split into batches: %v", b.id, t, offset, err)
		return resp
	}
	resp.batches = bs
	b.s.checks.served(r, offset, resp)
	return resp
}
