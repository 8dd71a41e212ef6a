package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0-3
//
// Behaviour:
//   - Grows a topic to Count partitions; not more than it has:
//     INVALID_PARTITIONS. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A topic
//     named twice: INVALID_REQUEST.
//   - A manual Assignment is accepted only when each new partition's sole
//     replica is this broker, else INVALID_REPLICA_ASSIGNMENT.
//   - ValidateOnly: the checks, nothing created.
//
// Version notes:
//   - v1: no change for us; v2: flexible; v3: no change for us.

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(r *request) reply {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if seen[rt.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q named more than once", kerr.InvalidRequest, rt.Topic)
		} else {
			err = r.s.createPartitions(rt, req.ValidateOnly)
		}
		if err != nil {
			st.ErrorCode = errorCode(nil, err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

func (s *Server) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	info, ok := s.parts.Topic(rt.Topic)
	if !ok {
		return fmt.Errorf("%w: %q", kerr.UnknownTopicOrPartition, rt.Topic)
	}
	if rt.Count <= info.Partitions {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d", kerr.InvalidPartitions, rt.Topic, info.Partitions, rt.Count)
	}
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(rt.Count-info.Partitions) {
			return fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(rt.Assignment), rt.Count-info.Partitions)
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != NodeID {
				return fmt.Errorf("%w: each new partition must have exactly broker %d as replica", kerr.InvalidReplicaAssignment, NodeID)
			}
		}
	}
	if validateOnly {
		return nil
	}
	if err := s.parts.CreatePartitions(rt.Topic, rt.Count); err != nil {
		return err
	}
	s.log.Info("created partitions", "topic", rt.Topic, "partitions", rt.Count)
	return nil
}
