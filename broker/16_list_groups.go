package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-5
//
// Behaviour:
//   - Every group this broker coordinates (all of them) with its protocol
//     type; its state from v4, filtered by StatesFilter (case-insensitive);
//     v5 TypesFilter: every group is "classic".
//
// Version notes:
//   - v1: ThrottleMillis; v3: flexible; v4: states; v5: types.

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(r *request) reply {
	return done(r.s.groups().ListGroups(r.body.(*kmsg.ListGroupsRequest)))
}
