package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// ElectLeaders: v0-2
//
// Behaviour:
//   - Forwarded to the active controller, which decides every partition on
//     one image (cluster.Settings.Elect, with the election rules of every
//     other election) and commits the elections as one batch of
//     ChangePartition records; each new leader's epoch is bumped, and
//     every broker applies it from its metadata.
//   - ElectionType 0, preferred: leadership moves to the first replica of
//     the assignment if it is in the ISR and active; it already leads:
//     ELECTION_NOT_NEEDED; out of the ISR, fenced or shutting down:
//     PREFERRED_LEADER_NOT_AVAILABLE.
//   - ElectionType 1, unclean: only for a partition with no leader (no
//     live ISR or ELR member): an in-sync or eligible replica if one is
//     active, else any active replica, whatever the topic's
//     unclean.leader.election.enable; a leader exists: ELECTION_NOT_NEEDED;
//     no replica active: ELIGIBLE_LEADERS_NOT_AVAILABLE.
//   - Null Topics: every partition of every topic. Unknown topic or
//     partition: UNKNOWN_TOPIC_OR_PARTITION. Errors are per partition,
//     with a message.
//   - The answer waits (up to TimeoutMillis, at least a few seconds) until
//     this broker's metadata shows the elections done, so that a Metadata
//     request that follows sees the new leaders here. No controller
//     reachable: NOT_CONTROLLER.
//   - The controller also moves leaderships back to preferred replicas by
//     itself every few seconds (Kafka's auto.leader.rebalance.enable),
//     unless ClusterConfig.LeaderRebalanceInterval is negative.
//
// Version notes:
//   - v0: preferred elections only, no ElectionType; v1: ElectionType,
//     the top-level ErrorCode; v2: flexible.

func init() { register(43, 0, 2, handleElectLeaders) }

func handleElectLeaders(r *request) reply {
	req := r.body.(*kmsg.ElectLeadersRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(ctx context.Context, resp kmsg.Response) {
		r.s.awaitElected(ctx, cluster.TypeOf(req), resp.(*kmsg.ElectLeadersResponse))
	})
}

// awaitElected waits until this broker's reconciled metadata shows every
// election the controller answered without an error done. A later
// election of the same partition (a failover) can keep that from ever
// holding: the wait then ends with the admin timeout, and the answer,
// which is the controller's, is the same.
func (s *Server) awaitElected(ctx context.Context, typ cluster.ElectionType, resp *kmsg.ElectLeadersResponse) {
	_ = s.await(ctx, func() bool {
		img := s.store.Image()
		if s.reconciled.value() < int64(img.Offset()) {
			return false
		}
		set := s.ctl.Settings()
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode == 0 && !set.Elected(img, typ, st.Topic, sp.Partition) {
					return false
				}
			}
		}
		return true
	})
}
