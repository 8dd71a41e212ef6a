package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0-4
//
// Behaviour:
//   - Keeps a member's session alive. REBALANCE_IN_PROGRESS tells a member
//     of the current generation to rejoin; ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID (also for a group that does not exist) and
//     FENCED_INSTANCE_ID as Kafka.
//
// Version notes:
//   - v1: ThrottleMillis; v3: InstanceID; v4: flexible.

func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(r *request) reply {
	req := r.body.(*kmsg.HeartbeatRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		return done(resp)
	}
	return done(c.Heartbeat(req))
}
