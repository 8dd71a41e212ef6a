package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: v0-5
//
// Behaviour:
//   - v0-2: one member by member id (what librdkafka sends); its error, if
//     any, is the top-level error code.
//   - v3+: a list of members by member id and/or instance id, an error code
//     each (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); a group that does not
//     exist answers UNKNOWN_MEMBER_ID for every member.
//   - The group rebalances without the members that left.
//
// Version notes:
//   - v1: ThrottleMillis; v3: Members; v4: flexible; v5: Reason (ignored).

func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(r *request) reply {
	req := r.body.(*kmsg.LeaveGroupRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = code
		return done(resp)
	}
	return done(c.LeaveGroup(req))
}
