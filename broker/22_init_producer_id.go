package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// InitProducerID: v0-4
//
// Behaviour:
//   - Idempotent producers (TransactionalID null) get a fresh producer id
//     and epoch 0 from a block the controller allocated to this broker
//     (pids.go), so ids are unique cluster-wide and never repeat across
//     restarts. While no block can be had (no controller) the answer is
//     COORDINATOR_NOT_AVAILABLE, which clients retry. A producer re-initializing with
//     its old id and epoch (v3+, KIP-360) also gets a fresh id, as Kafka does
//     for non-transactional producers.
//   - Transactional producers (TransactionalID set) go to the id's
//     transaction coordinator (txns.go, package txn): NOT_COORDINATOR
//     elsewhere. The first InitProducerId of an id gets a producer id and
//     epoch 0; each later one the next epoch, which fences every earlier
//     instance (their requests get PRODUCER_FENCED, or
//     INVALID_PRODUCER_EPOCH before v4), after aborting a transaction the
//     id left open (CONCURRENT_TRANSACTIONS until that is done: clients
//     retry). A timeout above transaction.max.timeout.ms:
//     INVALID_TRANSACTION_TIMEOUT. A producer recovering with its id and
//     epoch (v3+) keeps its id; one naming an id or epoch that is no longer
//     current is fenced.
//
// Version notes:
//   - v1: ThrottleMillis semantics; v2: flexible; v3: ProducerID and
//     ProducerEpoch in the request; v4: PRODUCER_FENCED for transactions
//     (nothing changes for idempotent producers).

func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(r *request) reply {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	s := r.s
	if req.TransactionalID != nil {
		return initTxnProducer(r, req, resp)
	}
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, autoCreateWait)
		defer cancel()
		id, err := s.life.nextPID(ctx)
		if err != nil {
			s.log.Warn("allocating a producer id", "err", err)
			resp.ErrorCode = errorCode(nil, err)
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	})
}

// initTxnProducer is InitProducerId for a transactional producer.
func initTxnProducer(r *request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) reply {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	c, code := r.s.txnCoordinator(*req.TransactionalID)
	if c == nil {
		resp.ErrorCode = code
		return done(resp)
	}
	in := txn.InitRequest{
		Timeout:    time.Duration(req.TransactionTimeoutMillis) * time.Millisecond,
		ProducerID: -1, Epoch: -1,
		Fenced: fencedCode(req.Version, 4),
	}
	if req.Version >= 3 {
		in.ProducerID, in.Epoch = req.ProducerID, req.ProducerEpoch
	}
	return later(func(ctx context.Context) kmsg.Response {
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = c.InitProducerID(ctx, *req.TransactionalID, in)
		return resp
	})
}

// fencedCode is the code for a fenced producer at request version v of an
// API that has PRODUCER_FENCED from version since (KIP-588), and
// INVALID_PRODUCER_EPOCH before.
func fencedCode(v, since int16) int16 {
	if v >= since {
		return kerr.ProducerFenced.Code
	}
	return kerr.InvalidProducerEpoch.Code
}
