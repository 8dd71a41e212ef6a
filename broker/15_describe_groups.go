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
	return done(r.s.groups().DescribeGroups(r.body.(*kmsg.DescribeGroupsRequest)))
}
