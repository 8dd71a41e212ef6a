package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-3
//
// Behaviour:
//   - Group keys (type 0, the only type before v1): this broker is the
//     coordinator of every group. A key longer than the group id limit gets
//     INVALID_GROUP_ID.
//   - Transaction keys (type 1) and any other type: INVALID_REQUEST with a
//     message; transactions are not supported.
//
// Version notes:
//   - v1: KeyType, ErrorMessage, ThrottleMillis; v3: flexible. v4+ (batched
//     keys) is not advertised.

func init() { register(10, 0, 3, handleFindCoordinator) }

func handleFindCoordinator(r *request) reply {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.NodeID = -1
	switch {
	case req.CoordinatorType != 0:
		resp.ErrorCode = kerr.InvalidRequest.Code
		msg := fmt.Sprintf("coordinator type %d is not supported (transactions are not)", req.CoordinatorType)
		resp.ErrorMessage = &msg
	case !r.s.groups().ValidGroupID(req.CoordinatorKey, true):
		resp.ErrorCode = kerr.InvalidGroupID.Code
	default:
		resp.NodeID = NodeID
		resp.Host, resp.Port = r.s.advertisedHostPort()
	}
	return done(resp)
}
