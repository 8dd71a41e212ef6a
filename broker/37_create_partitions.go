package broker

import (
	"context"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0-3
//
// Behaviour:
//   - Forwarded to the active controller: grows a topic to Count
//     partitions, placed as CreateTopics places them; not more than it has:
//     INVALID_PARTITIONS. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A topic
//     named twice: INVALID_REQUEST.
//   - A manual Assignment names registered brokers for each new partition,
//     as many as the topic's replication factor, else
//     INVALID_REPLICA_ASSIGNMENT.
//   - ValidateOnly: the checks, nothing created.
//   - The answer waits until this broker's metadata has the new partitions.
//
// Version notes:
//   - v1: no change for us; v2: flexible; v3: no change for us.

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(r *request) reply {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(ctx context.Context, resp kmsg.Response) {
		for i, st := range resp.(*kmsg.CreatePartitionsResponse).Topics {
			if st.ErrorCode == 0 && !req.ValidateOnly {
				r.s.awaitPartitions(ctx, st.Topic, req.Topics[i].Count)
			}
		}
	})
}

// awaitPartitions waits until this broker's metadata shows topic with n
// partitions and it holds those it replicates.
func (s *Server) awaitPartitions(ctx context.Context, topic string, n int32) {
	_ = s.await(ctx, func() bool {
		t, ok := s.store.Image().Topic(topic)
		return ok && int32(len(t.Partitions)) >= n && s.holdsTopic(topic, uuid.Nil)
	})
}
