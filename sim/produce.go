package sim

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
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
	// A transactional producer's: its id, the topic's name, and whether
	// the partition is added to its transaction by this write (KIP-890's
	// second part) rather than by an AddPartitionsToTxn before it.
	txnID string
	topic string
	add   bool
}

type produceResp struct {
	err        error
	base, last int64
	epoch      int32    // the acknowledging leader's epoch, for the checkers (not on the wire)
	holders    []holder // checks.holders when the leader answered, for the checkers
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
	data := append([]byte(nil), pr.data...)
	app, err := r.p.Append(data)
	r.observe()
	var need *partition.VerifyNeeded
	if errors.As(err, &need) {
		b.verifyProduce(pr, r, data, need, reply)
		return
	}
	b.appended(pr, r, app, err, reply)
}

// appended waits for the acknowledgement of what Append or AppendVerified
// did with a produce, or answers its error.
func (b *broker) appended(pr produceReq, r *replica, app partition.Appended, err error, reply func(produceResp)) {
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
			first, _ := valueAt(r.b.s, r.view(), w.base)
			holders := r.b.s.checks.holders(r.tp, w.base, w.last, first)
			w.reply(produceResp{base: w.base, last: w.last, epoch: w.epoch, holders: holders})
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

// verifyProduce is the leader's half of KIP-890 for a batch that opens its
// producer's transaction here, as the broker's appendVerified: ask the
// coordinator (in process when it runs here, AddPartitionsToTxn otherwise)
// whether the partition is in the transaction, or to add it; append with
// the partition's guard if so, answer the coordinator's code, as
// txn.VerifyAnswer maps it, if not. The client retries
// CONCURRENT_TRANSACTIONS (the broker retries it inside, for a while).
func (b *broker) verifyProduce(pr produceReq, r *replica, data []byte, need *partition.VerifyNeeded, reply func(produceResp)) {
	tp := txn.TopicPartition{Topic: pr.topic, Partition: pr.tp.part}
	b.verifyTxn(pr.txnID, txn.Producer{ID: need.ProducerID, Epoch: need.Epoch, Fenced: kerr.InvalidProducerEpoch.Code}, tp, pr.add, func(code int16) {
		if code != 0 || !r.current() {
			r.p.DropGuard(need.ProducerID, need.Guard)
			if code == 0 {
				code = kerr.NotLeaderForPartition.Code
			}
			reply(produceResp{err: kerr.ErrorForCode(code)})
			return
		}
		app, err := r.p.AppendVerified(data, need.Guard)
		r.observe()
		b.appended(pr, r, app, err, reply)
	})
}

// verifyTxn asks the coordinator of transactional id whether tp is in
// producer pr's ongoing transaction, or, when add, to add it (KIP-890);
// done gets its code as txn.VerifyAnswer maps it, unless this process is
// gone meanwhile (its client then times out).
func (b *broker) verifyTxn(id string, pr txn.Producer, tp txn.TopicPartition, add bool, done func(int16)) {
	kind := txn.KindVerify
	if add {
		kind = txn.KindAdd
	}
	gen := b.gen
	b.askCoordinator(txn.Request{Kind: kind, ID: id, Producer: pr, Partitions: []txn.TopicPartition{tp}}, func(a txn.Answer) {
		if !b.up || b.gen != gen {
			return
		}
		code := a.Code
		if kind == txn.KindVerify && len(a.Codes) == 1 {
			code = a.Codes[0]
		}
		done(txn.VerifyAnswer(code, add))
	})
}

// askCoordinator sends req to the coordinator of its transactional id: in
// process when it runs here, otherwise to the leader of its partition of
// __transaction_state; a lost answer is NOT_COORDINATOR.
func (b *broker) askCoordinator(req txn.Request, done func(txn.Answer)) {
	if c, _ := b.txnCoordFor(req.ID); c != nil {
		c.handle(req, done)
		b.settle()
		return
	}
	none := txn.Answer{ProducerID: -1, Epoch: -1, Code: kerr.NotCoordinator.Code, Codes: fill(len(req.Partitions), kerr.NotCoordinator.Code)}
	t, ok := b.store.Image().Topic(txnStateTopic)
	if !ok {
		done(none)
		return
	}
	leader := t.Partitions[txnPartitionOf(req.ID, len(t.Partitions))].Leader
	if leader == cluster.NoLeader || leader == b.id {
		done(none)
		return
	}
	b.s.rpc(b.id, leader, "txn-verify", 1000, func(reply func(any)) {
		b.s.brokers[leader-1].serveTxn(req, func(a txn.Answer) { reply(a) })
	}, func(resp any) {
		if a, ok := resp.(txn.Answer); ok {
			done(a)
			return
		}
		done(none)
	})
}
