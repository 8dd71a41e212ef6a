package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v0-6
//
// Behaviour:
//   - Each named topic is deleted with its data, synchronously (TimeoutMillis
//     is not needed). Unknown: UNKNOWN_TOPIC_OR_PARTITION.
//   - v6 names topics by name or by id; an id that matches no topic gets
//     UNKNOWN_TOPIC_ID; both null name and zero id gets INVALID_REQUEST.
//   - Internal topics (__consumer_offsets) cannot be deleted:
//     INVALID_REQUEST with a message saying why.
//
// Version notes:
//   - v1: ThrottleMillis; v4: flexible; v5: ErrorMessage; v6: topics by id.

func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(r *request) reply {
	req := r.body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if req.Version < 6 {
		for _, name := range req.TopicNames {
			n := name
			req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, err := r.s.deleteTopic(rt)
		if name != "" {
			st.Topic = &name
		}
		if err != nil {
			st.ErrorCode = errorCode(nil, err)
			if req.Version >= 5 {
				st.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

// deleteTopic deletes one requested topic and returns its name.
func (s *Server) deleteTopic(rt kmsg.DeleteTopicsRequestTopic) (string, error) {
	var name string
	switch {
	case rt.Topic != nil:
		name = *rt.Topic
	case rt.TopicID != [16]byte{}:
		for _, info := range s.parts.Topics() {
			if info.ID == rt.TopicID {
				name = info.Name
			}
		}
		if name == "" {
			return "", kerr.UnknownTopicID
		}
	default:
		return "", fmt.Errorf("%w: a topic with neither name nor id", kerr.InvalidRequest)
	}
	if info, ok := s.parts.Topic(name); ok && info.Internal {
		return name, fmt.Errorf("%w: %q is an internal topic", kerr.InvalidRequest, name)
	}
	if err := s.parts.DeleteTopic(name); err != nil {
		return name, err
	}
	// A topic created again under the same name must not inherit the old
	// one's committed offsets.
	s.groups().TopicDeleted(name)
	s.log.Info("deleted topic", "topic", name)
	return name, nil
}
