package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: v0-9
//
// Behaviour (the classic group protocol; see package group):
//   - A new dynamic member gets MEMBER_ID_REQUIRED with its member id
//     (v4+) and joins again with it; older versions join at once. Static
//     members (group.instance.id, v5+) join at once and keep their slot
//     across restarts.
//   - The answer waits for the rebalance: every member rejoined, or the
//     rebalance timeout; a group formed from Empty also waits 250 ms after
//     its latest new member (group.initial.rebalance.delay).
//   - Errors: INVALID_GROUP_ID (empty or over 1024 bytes),
//     INVALID_SESSION_TIMEOUT (outside 6 s to 30 min),
//     INCONSISTENT_GROUP_PROTOCOL (protocol type differs or no protocol in
//     common), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED
//     (1000 members), INVALID_REQUEST (protocol metadata over 1 MiB).
//   - While the server shuts down a parked JoinGroup is answered
//     COORDINATOR_NOT_AVAILABLE.
//
// Version notes:
//   - v1: RebalanceTimeoutMillis; v2: ThrottleMillis; v4: MEMBER_ID_REQUIRED;
//     v5: InstanceID; v6: flexible; v7: ProtocolType in the response; v8:
//     Reason (ignored); v9: SkipAssignment for a static leader rejoining.

func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(r *request) reply {
	req := r.body.(*kmsg.JoinGroupRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = code
		return done(resp)
	}
	wait := c.StartJoinGroup(clientOf(r), req)
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := s.untilQuit(ctx)
		defer cancel()
		return wait(ctx)
	})
}
