package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-2
//
// Behaviour:
//   - A group with no members loses its metadata and committed offsets:
//     tombstones in __consumer_offsets, answered once durable.
//   - GROUP_ID_NOT_FOUND for a group that does not exist, NON_EMPTY_GROUP
//     while it has members, INVALID_GROUP_ID over the length limit.
//
// Version notes:
//   - v1: ThrottleMillis semantics; v2: flexible.

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(r *request) reply {
	wait := r.s.groups().StartDeleteGroups(r.body.(*kmsg.DeleteGroupsRequest))
	return later(func(ctx context.Context) kmsg.Response { return wait(ctx) })
}
