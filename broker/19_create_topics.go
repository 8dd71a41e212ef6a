package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// CreateTopics: v0-7
//
// Behaviour:
//   - NumPartitions -1 (v4+) means the server's default partition count;
//     ReplicationFactor must be -1 or 1 (one broker), else
//     INVALID_REPLICATION_FACTOR. A manual ReplicaAssignment is accepted
//     when every partition's only replica is this broker (the partition
//     count is then the assignment's length), else
//     INVALID_REPLICA_ASSIGNMENT.
//   - Names, partition counts and configs are checked by the partition
//     manager: INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_CONFIG,
//     TOPIC_ALREADY_EXISTS. A topic named twice in one request gets
//     INVALID_REQUEST for each mention.
//   - ValidateOnly (v1+): the checks above that need no creation are run
//     (existence, counts, replication, known config keys), nothing is
//     created.
//   - Creation is synchronous: TimeoutMillis is not needed.
//
// Version notes:
//   - v1: ErrorMessage, ValidateOnly; v4: default partitions and
//     replication (-1); v5: flexible, the created topic's partitions,
//     replication factor and configs; v7: TopicID.

func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(r *request) reply {
	req := r.body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if seen[rt.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q named more than once", kerr.InvalidRequest, rt.Topic)
		} else {
			err = r.s.createTopic(req, rt, &st)
		}
		if err != nil {
			st.ErrorCode = errorCode(nil, err)
			if req.Version >= 1 {
				st.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

func (s *Server) createTopic(req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic) error {
	partitions := rt.NumPartitions
	if partitions == -1 {
		partitions = s.cfg.DefaultPartitions
	}
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return fmt.Errorf("%w: replication factor %d on a single broker", kerr.InvalidReplicationFactor, rt.ReplicationFactor)
	}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return fmt.Errorf("%w: both a replica assignment and partitions or replication", kerr.InvalidRequest)
		}
		if err := checkAssignment(rt.ReplicaAssignment); err != nil {
			return err
		}
		partitions = int32(len(rt.ReplicaAssignment))
	}
	configs := make(map[string]*string, len(rt.Configs))
	for _, c := range rt.Configs {
		configs[c.Name] = c.Value
	}
	if req.ValidateOnly {
		return s.validateTopic(rt.Topic, partitions, configs, st)
	}
	info, err := s.parts.CreateTopic(rt.Topic, partitions, configs)
	if err != nil {
		return err
	}
	s.log.Info("created topic", "topic", info.Name, "partitions", info.Partitions)
	st.TopicID = info.ID
	st.NumPartitions = info.Partitions
	st.ReplicationFactor = 1
	for _, e := range topicConfigEntries(info) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.name, e.value, int8(e.source)
		st.Configs = append(st.Configs, c)
	}
	return nil
}

// checkAssignment accepts a manual assignment only if it is ours alone.
func checkAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) error {
	for i, a := range as {
		if a.Partition != int32(i) {
			return fmt.Errorf("%w: partitions must be numbered 0..%d in order", kerr.InvalidReplicaAssignment, len(as)-1)
		}
		if len(a.Replicas) != 1 || a.Replicas[0] != NodeID {
			return fmt.Errorf("%w: partition %d must have exactly broker %d as replica", kerr.InvalidReplicaAssignment, i, NodeID)
		}
	}
	return nil
}

// validateTopic runs the checks of a creation without creating anything.
func (s *Server) validateTopic(name string, partitions int32, configs map[string]*string, st *kmsg.CreateTopicsResponseTopic) error {
	if !legalTopicName(name) {
		return fmt.Errorf("%w: %q", kerr.InvalidTopicException, name)
	}
	if _, ok := s.parts.Topic(name); ok {
		return fmt.Errorf("%w: %q", kerr.TopicAlreadyExists, name)
	}
	if partitions <= 0 {
		return fmt.Errorf("%w: %d partitions", kerr.InvalidPartitions, partitions)
	}
	for k := range configs {
		if _, ok := partition.ConfigDefaults[k]; !ok {
			return fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, k)
		}
	}
	st.NumPartitions, st.ReplicationFactor = partitions, 1
	return nil
}

// legalTopicName is Kafka's rule: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func legalTopicName(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
