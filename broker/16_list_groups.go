package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-5
//
// Behaviour:
//   - Every group this broker coordinates (a client asks every broker) with its protocol
//     type; its state from v4, filtered by StatesFilter (case-insensitive);
//     v5 TypesFilter: every group is "classic".
//
// Version notes:
//   - v1: ThrottleMillis; v3: flexible; v4: states; v5: types.

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(r *request) reply {
	req := r.body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, c := range r.s.groups.all() {
		resp.Groups = append(resp.Groups, c.ListGroups(req).Groups...)
	}
	return done(resp)
}
