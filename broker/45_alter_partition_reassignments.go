package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// AlterPartitionReassignments: v0-1
//
// Behaviour:
//   - Forwarded to the active controller, which decides every partition on
//     one image (cluster.Settings.Reassign) and commits the changes as one
//     batch of ChangePartition records. A move first adds the target's new
//     replicas (Replicas is the target followed by the replicas leaving;
//     AddingReplicas, RemovingReplicas say which): they open the partition
//     as followers, fetch from the leader and join the ISR once caught up.
//     When every adding replica is in the ISR the controller commits the
//     target (KIP-455): the leaving replicas drop out of the ISR, a leader
//     leaving is replaced by an in-sync replica of the target (a new leader
//     epoch), and each broker left out closes and deletes its replica.
//   - Replicas null: cancels the reassignment in progress, back to the
//     original replicas (without the adding ones, in the order of the
//     move); NO_REASSIGNMENT_IN_PROGRESS if there is none.
//   - The same target as now, or as the move in progress: nothing to do,
//     no error. A new target while moving starts again from the original
//     replicas.
//   - Errors per partition, with a message: UNKNOWN_TOPIC_OR_PARTITION;
//     INVALID_REPLICA_ASSIGNMENT for an empty target, a broker repeated or
//     never registered, or a move that would leave no in-sync replica or
//     no leader; INVALID_REPLICATION_FACTOR (v1) for a target of another
//     size when AllowReplicationFactorChange is false (KIP-860).
//   - The answer waits (up to TimeoutMillis, at least a few seconds) until
//     this broker's metadata shows each accepted partition moving to its
//     target (or back), so that a ListPartitionReassignments or Metadata
//     request that follows sees it here. No controller reachable:
//     NOT_CONTROLLER, at the top level and on every partition.
//   - ListPartitionReassignments (46) shows the moves in progress; one is
//     done when it leaves that list.
//
// Version notes:
//   - v0: flexible; v1: AllowReplicationFactorChange (default true),
//     echoed in the response.

func init() { register(45, 0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(r *request) reply {
	req := r.body.(*kmsg.AlterPartitionAssignmentsRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(ctx context.Context, resp kmsg.Response) {
		r.s.awaitReassigned(ctx, req, resp.(*kmsg.AlterPartitionAssignmentsResponse))
	})
}

// awaitReassigned waits until this broker's reconciled metadata shows
// every partition the controller accepted on its target, or back on its
// original replicas for a cancellation. A later change of the same
// partition can keep that from ever holding: the wait then ends with the
// admin timeout, and the answer, which is the controller's, is the same.
func (s *Server) awaitReassigned(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse) {
	type want struct {
		topic     string
		partition int32
		target    []int32
	}
	var wants []want
	for i, st := range resp.Topics {
		for j, sp := range st.Partitions {
			if sp.ErrorCode != 0 || i >= len(req.Topics) || j >= len(req.Topics[i].Partitions) {
				continue
			}
			wants = append(wants, want{st.Topic, sp.Partition, req.Topics[i].Partitions[j].Replicas})
		}
	}
	_ = s.await(ctx, func() bool {
		img := s.store.Image()
		if s.reconciled.value() < int64(img.Offset()) {
			return false
		}
		for _, w := range wants {
			if !cluster.Reassigned(img, w.topic, w.partition, w.target) {
				return false
			}
		}
		return true
	})
}
