package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// EndTxn: v0-5
//
// Behaviour:
//   - At the transactional id's coordinator (NOT_COORDINATOR elsewhere):
//     commits or aborts the producer's transaction. The decision is
//     committed to __transaction_state before the answer; the markers
//     follow in the background, and until they are all written the next
//     transaction's requests get CONCURRENT_TRANSACTIONS (clients retry).
//     A retry of an EndTxn that was answered gets the same answer.
//   - INVALID_PRODUCER_ID_MAPPING for another producer id, PRODUCER_FENCED
//     (INVALID_PRODUCER_EPOCH before v2) for an old epoch,
//     INVALID_TXN_STATE for a commit of an aborted transaction (one that
//     timed out, say), an abort of a committed one, or an end with no
//     transaction begun.
//
// Version notes:
//   - v2: PRODUCER_FENCED; v3: flexible; v4: no change for this broker;
//     v5 (KIP-890's second part): every end bumps the producer's epoch, and
//     the markers carry the new one, so a late write of the transaction
//     that ended is refused (INVALID_PRODUCER_EPOCH); the answer carries
//     the producer id and the new epoch. An abort with nothing begun is
//     fine and bumps it too. A retry at the old epoch of an end that was
//     answered gets the same answer.

func init() { register(26, 0, 5, handleEndTxn) }

func handleEndTxn(r *request) reply {
	req := r.body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	c, code := r.s.txnCoordinator(req.TransactionalID)
	if c == nil {
		resp.ErrorCode = code
		return done(resp)
	}
	pr := txn.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch, Fenced: fencedCode(req.Version, 2)}
	tv2 := req.Version >= 5
	return later(func(context.Context) kmsg.Response {
		var pid int64
		var epoch int16
		pid, epoch, resp.ErrorCode = c.EndTxn(req.TransactionalID, pr, req.Commit, tv2)
		if tv2 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp
	})
}
