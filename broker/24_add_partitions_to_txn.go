package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
)

// AddPartitionsToTxn: v0-5
//
// Behaviour:
//   - At the transactional id's coordinator (NOT_COORDINATOR elsewhere):
//     adds the partitions to the producer's transaction, beginning it if
//     none is open, and answers once that is committed to
//     __transaction_state. The producer id must be the id's
//     (INVALID_PRODUCER_ID_MAPPING) and the epoch current (PRODUCER_FENCED,
//     INVALID_PRODUCER_EPOCH before v2); while the last transaction's
//     markers are being written: CONCURRENT_TRANSACTIONS, which clients
//     retry.
//   - A partition that does not exist, or of an internal topic: that
//     partition UNKNOWN_TOPIC_OR_PARTITION (TOPIC_AUTHORIZATION_FAILED for
//     an internal one, which only AddOffsetsToTxn, or a group coordinator
//     at v4+, adds), the others OPERATION_NOT_ATTEMPTED, nothing added.
//   - v4+ (brokers only, KIP-890): several transactions in one request,
//     and VerifyOnly, a partition leader's question whether a partition is
//     in the producer's ongoing transaction (INVALID_TXN_STATE if not),
//     which changes nothing. A broker's add (not VerifyOnly) that finds
//     the last transaction's markers under way is held until they are in,
//     up to half a second, then answered CONCURRENT_TRANSACTIONS.
//
// Version notes:
//   - v2: PRODUCER_FENCED; v3: flexible; v4: batched transactions,
//     VerifyOnly, top-level error code; v5: no change for this broker.

func init() { register(24, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(r *request) reply {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	s := r.s
	fenced := fencedCode(req.Version, 2)
	if req.Version < 4 {
		return later(func(context.Context) kmsg.Response {
			resp.Topics = addPartitionsV3(s, req, fenced)
			return resp
		})
	}
	return later(func(context.Context) kmsg.Response {
		for _, t := range req.Transactions {
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			pr := txn.Producer{ID: t.ProducerID, Epoch: t.ProducerEpoch, Fenced: fenced}
			tps := txnPartitions(t.Topics, func(t kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) {
				return t.Topic, t.Partitions
			})
			codes := addOrVerify(s, t.TransactionalID, pr, tps, t.VerifyOnly, true)
			for i, tp := range tps {
				if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
					tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
					tt.Topic = tp.Topic
					rt.Topics = append(rt.Topics, tt)
				}
				p := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				p.Partition, p.ErrorCode = tp.Partition, codes[i]
				rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, p)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp
	})
}

// addPartitionsV3 serves the one transaction of a v0-3 request.
func addPartitionsV3(s *Server, req *kmsg.AddPartitionsToTxnRequest, fenced int16) []kmsg.AddPartitionsToTxnResponseTopic {
	pr := txn.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch, Fenced: fenced}
	tps := txnPartitions(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
	codes := addOrVerify(s, req.TransactionalID, pr, tps, false, false)
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for i, tp := range tps {
		if n := len(out); n == 0 || out[n-1].Topic != tp.Topic {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = tp.Topic
			out = append(out, t)
		}
		p := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		p.Partition, p.ErrorCode = tp.Partition, codes[i]
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, p)
	}
	return out
}

// txnPartitions flattens a request's topics into partitions, in order.
func txnPartitions[T any](topics []T, of func(T) (string, []int32)) []txn.TopicPartition {
	var out []txn.TopicPartition
	for _, t := range topics {
		name, parts := of(t)
		for _, p := range parts {
			out = append(out, txn.TopicPartition{Topic: name, Partition: p})
		}
	}
	return out
}

// addOrVerify adds tps to pr's transaction of id, or verifies that they
// are in it, and returns each partition's code. A broker (v4+) may add an
// internal topic's partition: a group coordinator adds its
// __consumer_offsets partition for TxnOffsetCommit v5+.
func addOrVerify(s *Server, id string, pr txn.Producer, tps []txn.TopicPartition, verifyOnly, fromBroker bool) []int16 {
	codes := make([]int16, len(tps))
	fill := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	c, code := s.txnCoordinator(id)
	if c == nil {
		return fill(code)
	}
	if verifyOnly {
		return c.Verify(id, pr, tps)
	}
	img := s.store.Image()
	exists := func(tp txn.TopicPartition) bool {
		t, ok := img.Topic(tp.Topic)
		return ok && int(tp.Partition) < len(t.Partitions)
	}
	if refused := txn.CheckAdd(tps, exists, cluster.Internal, fromBroker); refused != nil {
		return refused
	}
	if fromBroker {
		// A partition leader's add for a write (KIP-890's second part), or
		// a group coordinator's for TxnOffsetCommit: held while the
		// producer's last transaction's markers are under way, so that
		// the leader goes on once they are in rather than at its next try.
		return fill(c.AddForWrite(id, pr, tps))
	}
	return fill(c.AddPartitions(id, pr, tps))
}
