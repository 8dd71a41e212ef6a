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
	req := r.body.(*kmsg.DeleteGroupsRequest)
	// One wait per group, each on the group's own coordinator.
	type part struct {
		wait func(context.Context) *kmsg.DeleteGroupsResponse
		code int16
		id   string
	}
	var parts []part
	for _, id := range req.Groups {
		c, code := r.s.groups.forKey(id)
		if c == nil {
			parts = append(parts, part{code: code, id: id})
			continue
		}
		one := *req
		one.Groups = []string{id}
		parts = append(parts, part{wait: c.StartDeleteGroups(&one), id: id})
	}
	return later(func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, p := range parts {
			if p.wait == nil {
				g := kmsg.NewDeleteGroupsResponseGroup()
				g.Group, g.ErrorCode = p.id, p.code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			resp.Groups = append(resp.Groups, p.wait(ctx).Groups...)
		}
		return resp
	})
}
