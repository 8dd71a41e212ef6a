package broker

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/minikafka/minikafka/cluster"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics: v0-7
//
// Behaviour:
//   - Forwarded to the active controller (a cluster.ControllerCore), which checks
//     and places everything: NumPartitions and ReplicationFactor -1 (v4+)
//     mean the defaults; a ReplicationFactor above the unfenced brokers gets
//     INVALID_REPLICATION_FACTOR; a manual ReplicaAssignment must name
//     registered brokers, the same count for every partition
//     (INVALID_REPLICA_ASSIGNMENT); names, partition counts and configs:
//     INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_CONFIG,
//     TOPIC_ALREADY_EXISTS; a topic named twice in one request gets
//     INVALID_REQUEST for each mention. Replicas are spread round-robin
//     from a random start, rack-aware when brokers have racks.
//   - The answer waits (up to TimeoutMillis, at least a few seconds) until
//     this broker's metadata has the new topics, so that a Metadata request
//     that follows sees them here. No controller reachable: NOT_CONTROLLER.
//   - ValidateOnly (v1+): the checks, nothing created.
//
// Version notes:
//   - v1: ErrorMessage, ValidateOnly; v4: default partitions and
//     replication (-1); v5: flexible, the created topic's partitions,
//     replication factor and configs; v7: TopicID.

func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(r *request) reply {
	req := r.body.(*kmsg.CreateTopicsRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(ctx context.Context, resp kmsg.Response) {
		for _, st := range resp.(*kmsg.CreateTopicsResponse).Topics {
			if st.ErrorCode == 0 && !req.ValidateOnly {
				_ = r.s.awaitTopic(ctx, st.Topic, uuid.UUID(st.TopicID))
			}
		}
	})
}

// adminTimeout is how long an admin request waits for the controller and
// this broker's metadata: the client's TimeoutMillis, but at least a few
// seconds (a client asking for 0 still wants its answer).
func adminTimeout(ms int32) time.Duration {
	return max(time.Duration(ms)*time.Millisecond, 5*time.Second)
}

// forwardAdmin is the waiting phase of a client's admin request: it goes
// to the active controller (up to timeoutMs, at least a few seconds), then
// settle waits, within the same time, for this broker's metadata to show
// what the controller did. When no controller answers, the request's own
// response says NOT_CONTROLLER on every topic.
func (s *Server) forwardAdmin(req kmsg.Request, timeoutMs int32, settle func(context.Context, kmsg.Response)) reply {
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, adminTimeout(timeoutMs))
		defer cancel()
		resp, err := s.ctlClient.request(ctx, req)
		if err != nil {
			s.log.Warn("no controller answered an admin request", "api", kmsg.NameForKey(req.Key()), "err", err)
			local, herr := cluster.NotActiveResponse(req, s.store.Image(), s.cfg.Clock.Now())
			if herr != nil {
				panic(herr) // only the controller's own requests are forwarded
			}
			return local
		}
		settle(ctx, resp)
		return resp
	})
}
