package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// Metadata: v0-12
//
// Behaviour:
//   - From this broker's image of the cluster metadata: every unfenced
//     broker with its advertised host, port and rack; the cluster id; and
//     as ControllerID this broker itself while it is unfenced, as Kafka's
//     KRaft brokers name a live broker there: every broker forwards the
//     admin requests a client sends "to the controller", and the active
//     controller is the one node a client most likely saw die (librdkafka
//     caches the id and dials it until its request times out). A fenced or
//     unregistered broker names the active controller when it is listed,
//     else itself.
//   - Per partition: leader (LEADER_NOT_AVAILABLE and leader -1 while it
//     has none), leader epoch, replicas, ISR, and the replicas whose broker
//     is fenced or unknown as offline replicas.
//   - Topics null (v1+) or empty (v0): every topic, internal ones flagged.
//     Otherwise the named topics in request order; an unknown one is created
//     (default partitions and replication, through the controller) when
//     auto-creation is on and the request allows it (AllowAutoTopicCreation,
//     v4+; always before v4), else UNKNOWN_TOPIC_OR_PARTITION. A name that
//     is not a legal topic name gets INVALID_TOPIC_EXCEPTION. A topic asked
//     for by ID (v10+) that does not exist gets UNKNOWN_TOPIC_ID.
//   - Authorized operations (v8+) are not computed: INT32_MIN, as Kafka
//     answers when they are not requested.
//   - On a broker that has not been registered and unfenced since it
//     started, held until it is (the session timeout at most; whenReady):
//     what it replayed may name its last incarnation's endpoint.
//
// Version notes:
//   - v1: controller, internal flag, null means all; v2: cluster id;
//     v4: AllowAutoTopicCreation; v5: offline replicas; v7: leader epoch;
//     v8: authorized operations; v9: flexible; v10: topic ids; v11: no
//     cluster authorized operations; v12: topics by id with null names.

func init() { register(3, 0, 12, whenReady(handleMetadata)) }

const noAuthorizedOps = -2147483648

func handleMetadata(r *request) reply {
	req := r.body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	s := r.s

	img := s.store.Image()
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	if req.Topics != nil && !(req.Version == 0 && len(req.Topics) == 0) {
		for _, rt := range req.Topics {
			if rt.Topic != nil && s.cfg.AutoCreate && allowCreate {
				if _, ok := img.Topic(*rt.Topic); !ok && cluster.ValidTopicName(*rt.Topic) == nil {
					if err := s.ensureTopic(*rt.Topic); err != nil {
						s.log.Warn("auto-creating a topic for Metadata", "topic", *rt.Topic, "err", err)
					}
				}
			}
		}
		img = s.store.Image()
	}
	s.describeBrokers(img, resp)
	resp.AuthorizedOperations = noAuthorizedOps
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range img.Topics() {
			resp.Topics = append(resp.Topics, metadataTopic(img, t))
		}
		return done(resp)
	}
	for _, rt := range req.Topics {
		resp.Topics = append(resp.Topics, metadataRequested(img, rt))
	}
	return done(resp)
}

// describeBrokers fills the brokers, the controller and the cluster id.
func (s *Server) describeBrokers(img *cluster.Metadata, resp *kmsg.MetadataResponse) {
	for _, b := range img.Brokers() {
		if b.Fenced {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rack := b.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	clusterID := s.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = s.cfg.NodeID
	if b, ok := img.Broker(s.cfg.NodeID); ok && !b.Fenced {
		return
	}
	if id, ok := s.activeController(); ok {
		if b, ok := img.Broker(id); ok && !b.Fenced {
			resp.ControllerID = id
		}
	}
}

// metadataRequested answers for one requested topic, by name or by id.
func metadataRequested(img *cluster.Metadata, rt kmsg.MetadataRequestTopic) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	st.Topic, st.TopicID = rt.Topic, rt.TopicID
	st.AuthorizedOperations = noAuthorizedOps
	if rt.Topic == nil {
		if t, ok := img.TopicByID(rt.TopicID); ok {
			return metadataTopic(img, t)
		}
		st.ErrorCode = kerr.UnknownTopicID.Code
		return st
	}
	if cluster.ValidTopicName(*rt.Topic) != nil {
		st.ErrorCode = kerr.InvalidTopicException.Code
		return st
	}
	t, ok := img.Topic(*rt.Topic)
	if !ok {
		st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return st
	}
	return metadataTopic(img, t)
}

// metadataTopic describes an existing topic.
func metadataTopic(img *cluster.Metadata, t *cluster.Topic) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	name := t.Name
	st.Topic, st.TopicID, st.IsInternal = &name, t.ID, cluster.Internal(t.Name)
	st.AuthorizedOperations = noAuthorizedOps
	st.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.Partitions))
	for i, p := range t.Partitions {
		sp := &st.Partitions[i]
		sp.Default()
		sp.Partition = int32(i)
		sp.Leader, sp.LeaderEpoch = p.Leader, p.LeaderEpoch
		sp.Replicas, sp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		for _, r := range p.Replicas {
			if b, ok := img.Broker(r); !ok || b.Fenced {
				sp.OfflineReplicas = append(sp.OfflineReplicas, r)
			}
		}
		if p.Leader == cluster.NoLeader {
			sp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	}
	return st
}
