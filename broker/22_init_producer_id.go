package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
//   - Transactions are not supported: a TransactionalID gets
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report at once
//     instead of retrying (a coordinator error would make them spin).
//
// Version notes:
//   - v1: ThrottleMillis semantics; v2: flexible; v3: ProducerID and
//     ProducerEpoch in the request; v4: PRODUCER_FENCED for transactions
//     (nothing changes for idempotent producers).

func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(r *request) reply {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return done(resp)
	}
	s := r.s
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
