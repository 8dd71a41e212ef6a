package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
)

// OffsetFetch: v1-7
//
// Behaviour:
//   - One group per request. Null topics (v2+): every partition the group
//     committed. A partition with no commit, or a group that does not
//     exist: offset -1, no error.
//   - Returns durable commits only (see OffsetCommit). RequireStable (v7):
//     UNSTABLE_OFFSET_COMMIT for a partition with an offset pending in a
//     transaction, and the answer waits for a read barrier, so that a
//     coordinator that lost its partition without knowing yet does not
//     answer from stale offsets (group.Coordinator.StartReadBarrier).
//   - A group id over the limit: INVALID_GROUP_ID (top level from v2, per
//     partition in v1).
//
// Version notes:
//   - v2: top-level ErrorCode, null topics; v3: ThrottleMillis; v5:
//     LeaderEpoch; v6: flexible; v7: RequireStable. v8+ (several groups per
//     request) is not advertised.

func init() { register(9, 1, 7, handleOffsetFetch) }

func handleOffsetFetch(r *request) reply {
	req := r.body.(*kmsg.OffsetFetchRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		return done(group.OffsetFetchFailed(req, code))
	}
	return done(c.OffsetFetch(req))
}
