package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments: v0
//
// Behaviour:
//   - Forwarded to the active controller, which answers from the image it
//     decides on (cluster.Reassignments), so that a move
//     AlterPartitionReassignments just started, or one the controller just
//     completed, shows as the controller sees it.
//   - Lists the partitions named (null Topics: every partition of every
//     topic) whose reassignment is in progress, each with its Replicas
//     (the target first, then the replicas leaving), AddingReplicas and
//     RemovingReplicas. Partitions not moving, and unknown topics and
//     partitions, are left out, as Kafka does: an empty answer for a
//     partition means its move is done (or was never started).
//   - No controller reachable: NOT_CONTROLLER.
//
// Version notes:
//   - v0: flexible.

func init() { register(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(r *request) reply {
	req := r.body.(*kmsg.ListPartitionReassignmentsRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(context.Context, kmsg.Response) {})
}
