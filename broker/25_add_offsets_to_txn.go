package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// AddOffsetsToTxn: v0-4
//
// Behaviour:
//   - Adds the group's __consumer_offsets partition to the producer's
//     transaction, as AddPartitionsToTxn adds a partition (same checks and
//     codes), so that the markers that end the transaction also reach the
//     group's coordinator, which then makes the offsets committed in the
//     transaction (TxnOffsetCommit) visible, or drops them. The offsets
//     topic is created if it does not exist yet.
//
// Version notes:
//   - v2: PRODUCER_FENCED; v3: flexible; v4: no change for this broker.

func init() { register(25, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(r *request) reply {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	s := r.s
	c, code := s.txnCoordinator(req.TransactionalID)
	if c == nil {
		resp.ErrorCode = code
		return done(resp)
	}
	if !validGroupID(req.Group, false) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return done(resp)
	}
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, findCoordinatorWait)
		defer cancel()
		if err := s.ensureOffsetsTopic(ctx); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		t, ok := s.store.Image().Topic(offsetsTopic)
		if !ok {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		tp := txn.TopicPartition{Topic: offsetsTopic, Partition: partitionFor(req.Group, int32(len(t.Partitions)))}
		pr := txn.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch, Fenced: fencedCode(req.Version, 2)}
		resp.ErrorCode = c.AddPartitions(req.TransactionalID, pr, []txn.TopicPartition{tp})
		return resp
	})
}
