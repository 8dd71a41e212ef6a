package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: v0-5
//
// Behaviour:
//   - State, protocol type, protocol and members (member id, instance id,
//     client id, host); member metadata and assignments only while the
//     group is Stable, as Kafka.
//   - A group that does not exist is described as Dead with no error.
//   - AuthorizedOperations (v3+) is not computed (no ACLs).
//
// Version notes:
//   - v1: ThrottleMillis; v3: IncludeAuthorizedOperations; v4: InstanceID;
//     v5: flexible. v6 (GROUP_ID_NOT_FOUND for missing groups) is not
//     advertised.

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(r *request) reply {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	// Each group is described by its own coordinator; one this broker does
	// not coordinate gets NOT_COORDINATOR, as Kafka answers.
	for _, id := range req.Groups {
		c, code := r.s.groups.forKey(id)
		if c == nil {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		one := *req
		one.Groups = []string{id}
		resp.Groups = append(resp.Groups, c.DescribeGroups(&one).Groups...)
	}
	return done(resp)
}
