package sim

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/engine"
)

// The leader's produce path, as the product's: validate the batch, check
// the idempotent producer's sequence (a duplicate is answered with the
// offsets it was stored at), assign offsets and the leader epoch, append,
// and answer acks=1 once the batch is synced, acks=all once the high
// watermark passes it (with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is
// by then below min.insync.replicas).

const produceWaitMs = 1500

type produceReq struct {
	tp   tp
	acks int16
	data []byte
}

type produceResp struct {
	err        error
	base, last int64
}

type waiter struct {
	last     int64
	acks     int16
	deadline int64
	reply    func(produceResp)
	base     int64
}

func (b *broker) serveProduce(pr produceReq, reply func(produceResp)) {
	r := b.replicas[pr.tp]
	if r == nil || r.leader == nil {
		reply(produceResp{err: kerr.NotLeaderForPartition})
		return
	}
	if err := r.leader.CheckProduce(pr.acks); err != nil {
		reply(produceResp{err: err})
		return
	}
	h, err := batch.Parse(pr.data)
	if err != nil {
		reply(produceResp{err: kerr.CorruptMessage})
		return
	}
	d, err := r.pstate.Check(h)
	if err != nil {
		reply(produceResp{err: err})
		return
	}
	if d.Duplicate {
		r.wait(&waiter{base: d.BaseOffset, last: d.LastOffset, acks: pr.acks, reply: reply})
		return
	}
	data := append([]byte(nil), pr.data...)
	base := r.log.EndOffset()
	batch.SetBaseOffset(data, base)
	batch.SetPartitionLeaderEpoch(data, r.leaderEpoch)
	if err := r.log.Append(engine.Batch{BaseOffset: base, Records: h.Offsets(), Data: data}); err != nil {
		reply(produceResp{err: kerr.KafkaStorageError})
		return
	}
	h.BaseOffset = base
	r.pstate.Record(h, base, b.s.now)
	r.leaderActions(r.leader, r.leader.Step(localAppended(r.log.EndOffset())))
	r.requestSync()
	r.wait(&waiter{base: base, last: h.LastOffset(), acks: pr.acks, reply: reply})
	r.wakeParked()
}

func (r *replica) wait(w *waiter) {
	w.deadline = r.b.s.now + produceWaitMs
	r.waiters = append(r.waiters, w)
	r.b.later(produceWaitMs, "produce-wait", r.resolveWaiters)
	r.resolveWaiters()
}

// resolveWaiters answers the producers whose batch is as safe as they asked.
func (r *replica) resolveWaiters() {
	if r.leader == nil {
		return
	}
	keep := r.waiters[:0]
	for _, w := range r.waiters {
		switch {
		case w.acks == -1 && r.leader.HW() > w.last:
			resp := produceResp{base: w.base, last: w.last}
			if err := r.leader.AfterAppendCheck(); err != nil {
				resp.err = err
			}
			w.reply(resp)
		case w.acks != -1 && r.durable > w.last:
			w.reply(produceResp{base: w.base, last: w.last})
		case r.b.s.now >= w.deadline:
			w.reply(produceResp{err: kerr.RequestTimedOut})
		default:
			keep = append(keep, w)
		}
	}
	r.waiters = keep
}

// serveConsume answers a consumer's fetch: whole batches from offset,
// below the high watermark only.
func (b *broker) serveConsume(t tp, offset int64) fetchResp {
	r := b.replicas[t]
	if r == nil || r.leader == nil {
		return fetchResp{err: kerr.NotLeaderForPartition}
	}
	hw := r.leader.HW()
	if offset < r.log.StartOffset() || offset > hw {
		return fetchResp{err: kerr.OffsetOutOfRange, hw: hw, logStart: r.log.StartOffset()}
	}
	resp := fetchResp{hw: hw, logStart: r.log.StartOffset()}
	bs, err := r.log.Read(offset, fetchMaxBytes)
	if err != nil && !errors.Is(err, engine.ErrOffsetOutOfRange) {
		return fetchResp{err: kerr.KafkaStorageError}
	}
	for _, bt := range bs {
		if bt.NextOffset() > hw {
			break
		}
		resp.batches = append(resp.batches, bt.Data)
	}
	b.s.checks.served(r, offset, resp)
	return resp
}
