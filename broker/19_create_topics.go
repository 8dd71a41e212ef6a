package broker

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics: v0-7
//
// Behaviour:
//   - Forwarded to the active controller (cluster.Controller), which checks
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
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, adminTimeout(req.TimeoutMillis))
		defer cancel()
		resp, failed := s.forward(ctx, req)
		if failed != nil {
			return failed
		}
		cr := resp.(*kmsg.CreateTopicsResponse)
		if !req.ValidateOnly {
			for _, st := range cr.Topics {
				if st.ErrorCode == 0 {
					_ = s.awaitTopic(ctx, st.Topic, uuid.UUID(st.TopicID))
				}
			}
		}
		return cr
	})
}

// adminTimeout is how long an admin request waits for the controller and
// this broker's metadata: the client's TimeoutMillis, but at least a few
// seconds (a client asking for 0 still wants its answer).
func adminTimeout(ms int32) time.Duration {
	return max(time.Duration(ms)*time.Millisecond, 5*time.Second)
}

// forward sends a client's admin request to the active controller. When
// none answers it returns the request's own response with NOT_CONTROLLER
// on every topic instead.
func (s *Server) forward(ctx context.Context, req kmsg.Request) (kmsg.Response, kmsg.Response) {
	resp, err := s.ctlClient.request(ctx, req)
	if err == nil {
		return resp, nil
	}
	s.log.Warn("no controller answered an admin request", "api", kmsg.NameForKey(req.Key()), "err", err)
	local, herr := s.ctl.Handle(ctx, req) // answers NOT_CONTROLLER for every topic
	if herr != nil {
		panic(herr)
	}
	return nil, local
}
