package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-3
//
// Behaviour:
//   - Group keys (type 0, the only type before v1): the coordinator is the
//     leader of the group's __consumer_offsets partition (groups.go). The
//     first request creates the topic through the controller. The answer
//     waits, up to a few seconds, for that partition to have a leader and,
//     when it is this broker, for its coordinator to be loaded; until then
//     COORDINATOR_NOT_AVAILABLE, which clients retry. A key longer than the
//     group id limit gets INVALID_GROUP_ID.
//   - Transaction keys (type 1): the coordinator is the leader of the
//     transactional id's __transaction_state partition (txns.go), found the
//     same way; the first request creates that topic.
//   - Any other type: INVALID_REQUEST.
//   - Held, as Metadata is, until this broker is registered and unfenced.
//
// Version notes:
//   - v1: KeyType, ErrorMessage, ThrottleMillis; v3: flexible. v4+ (batched
//     keys) is not advertised.

func init() { register(10, 0, 3, whenReady(handleFindCoordinator)) }

// findCoordinatorWait bounds how long FindCoordinator waits for a
// coordinator to appear before answering COORDINATOR_NOT_AVAILABLE.
const findCoordinatorWait = 5 * time.Second

func handleFindCoordinator(r *request) reply {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.NodeID = -1
	s := r.s
	topic, ensure, local := offsetsTopic, s.ensureOffsetsTopic, func(key string) bool {
		c, _ := s.groups.forKey(key)
		return c != nil
	}
	switch {
	case req.CoordinatorType == 1:
		topic, ensure, local = txnTopic, s.ensureTxnTopic, func(key string) bool {
			c, _ := s.txns.forKey(key)
			return c != nil
		}
		if req.CoordinatorKey == "" {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return done(resp)
		}
	case req.CoordinatorType != 0:
		resp.ErrorCode = kerr.InvalidRequest.Code
		return done(resp)
	case !validGroupID(req.CoordinatorKey, true):
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return done(resp)
	}
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, findCoordinatorWait)
		defer cancel()
		if err := ensure(ctx); err != nil {
			s.log.Warn("creating "+topic, "err", err)
		}
		var host string
		var port, id int32
		var code int16
		_ = s.await(ctx, func() bool {
			host, port, id, code = s.coordinatorOf(topic, req.CoordinatorKey, local)
			return code == 0
		})
		if code != 0 {
			resp.ErrorCode = code
			return resp
		}
		resp.NodeID, resp.Host, resp.Port = id, host, port
		return resp
	})
}

// coordinatorOf is the broker coordinating key, the leader of its
// partition of topic, or the error code to answer for now; local reports
// whether this broker's coordinator of key is loaded.
func (s *Server) coordinatorOf(topic, key string, local func(string) bool) (string, int32, int32, int16) {
	img := s.store.Image()
	t, ok := img.Topic(topic)
	if !ok {
		return "", 0, -1, kerr.CoordinatorNotAvailable.Code
	}
	p := t.Partitions[partitionFor(key, int32(len(t.Partitions)))]
	b, ok := img.Broker(p.Leader)
	if !ok || !b.Active() {
		return "", 0, -1, kerr.CoordinatorNotAvailable.Code
	}
	if b.ID == s.cfg.NodeID && !local(key) {
		return "", 0, -1, kerr.CoordinatorNotAvailable.Code
	}
	return b.Host, b.Port, b.ID, 0
}
