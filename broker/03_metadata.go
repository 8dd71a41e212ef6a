package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// Metadata: v0-12
//
// Behaviour:
//   - One broker, NodeID, at the advertised host and port; it is the
//     controller and the leader and only replica of every partition.
//   - Topics null (v1+) or empty (v0): every topic, internal ones flagged.
//     Otherwise the named topics in request order; an unknown one is created
//     with the default partition count when auto-creation is on and the
//     request allows it (AllowAutoTopicCreation, v4+; always before v4),
//     else UNKNOWN_TOPIC_OR_PARTITION. A name that is not a legal topic name
//     gets INVALID_TOPIC_EXCEPTION. A topic asked for by ID (v10+) that does
//     not exist gets UNKNOWN_TOPIC_ID.
//   - Authorized operations (v8+) are not computed: INT32_MIN, as Kafka
//     answers when they are not requested.
//
// Version notes:
//   - v1: controller, internal flag, null means all; v2: cluster id;
//     v4: AllowAutoTopicCreation; v5: offline replicas; v7: leader epoch;
//     v8: authorized operations; v9: flexible; v10: topic ids; v11: no
//     cluster authorized operations; v12: topics by id with null names.

func init() { register(3, 0, 12, handleMetadata) }

const noAuthorizedOps = -2147483648

func handleMetadata(r *request) reply {
	req := r.body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	s := r.s

	host, port := s.AdvertisedHostPort()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = NodeID, host, port
	resp.Brokers = append(resp.Brokers, b)
	resp.ClusterID = &s.cfg.ClusterID
	resp.ControllerID = NodeID
	resp.AuthorizedOperations = noAuthorizedOps

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, info := range s.parts.Topics() {
			resp.Topics = append(resp.Topics, s.metadataTopic(info))
		}
		return done(resp)
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		resp.Topics = append(resp.Topics, s.metadataRequested(rt, allowCreate))
	}
	return done(resp)
}

// metadataRequested answers for one requested topic, by name or by id.
func (s *Server) metadataRequested(rt kmsg.MetadataRequestTopic, allowCreate bool) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	st.Topic, st.TopicID = rt.Topic, rt.TopicID
	st.AuthorizedOperations = noAuthorizedOps
	if rt.Topic == nil {
		for _, info := range s.parts.Topics() {
			if info.ID == rt.TopicID {
				return s.metadataTopic(info)
			}
		}
		st.ErrorCode = kerr.UnknownTopicID.Code
		return st
	}
	name := *rt.Topic
	info, ok := s.parts.Topic(name)
	if !ok && allowCreate && s.cfg.AutoCreate {
		if err := s.ensureTopic(name); err != nil {
			st.ErrorCode = errorCode(nil, err)
			return st
		}
		info, ok = s.parts.Topic(name)
	}
	if !ok {
		st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return st
	}
	return s.metadataTopic(info)
}

// metadataTopic describes an existing topic.
func (s *Server) metadataTopic(info partition.TopicInfo) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	name := info.Name
	st.Topic, st.TopicID, st.IsInternal = &name, info.ID, info.Internal
	st.AuthorizedOperations = noAuthorizedOps
	st.Partitions = make([]kmsg.MetadataResponseTopicPartition, info.Partitions)
	for i := range st.Partitions {
		sp := &st.Partitions[i]
		sp.Default()
		sp.Partition = int32(i)
		sp.Leader = NodeID
		sp.Replicas = []int32{NodeID}
		sp.ISR = []int32{NodeID}
		if p, err := s.parts.Partition(info.Name, int32(i)); err == nil {
			sp.LeaderEpoch = p.LeaderEpoch()
		} else {
			// Deleted or shrunk while we answer: report what failed.
			sp.ErrorCode = errorCode(nil, err)
		}
	}
	return st
}
