package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: v0-5
//
// Behaviour:
//   - The leader's assignment is stored in __consumer_offsets and, once
//     durable, every member waiting in SyncGroup gets its part. A member's
//     SyncGroup waits for the leader's; in a Stable group it is answered at
//     once with the current assignment.
//   - Errors: UNKNOWN_MEMBER_ID (also for a group that does not exist),
//     ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID,
//     INCONSISTENT_GROUP_PROTOCOL (v5 protocol type or name differ),
//     INVALID_REQUEST (an assignment over 1 MiB).
//
// Version notes:
//   - v1: ThrottleMillis; v3: InstanceID; v4: flexible; v5: ProtocolType
//     and ProtocolName.

func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(r *request) reply {
	req := r.body.(*kmsg.SyncGroupRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return done(resp)
	}
	wait := c.StartSyncGroup(req)
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := s.untilQuit(ctx)
		defer cancel()
		return wait(ctx)
	})
}
