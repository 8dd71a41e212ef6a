package broker

import (
	"context"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v0-6
//
// Behaviour:
//   - Forwarded to the active controller: each named topic leaves the
//     metadata, and every broker holding a replica deletes its data when
//     its metadata shows it gone (groups' committed offsets for it too).
//     Unknown: UNKNOWN_TOPIC_OR_PARTITION.
//   - v6 names topics by name or by id; an id that matches no topic gets
//     UNKNOWN_TOPIC_ID; both null name and zero id gets INVALID_REQUEST.
//   - Internal topics (__consumer_offsets) cannot be deleted:
//     INVALID_REQUEST with a message saying why.
//   - The answer waits (up to TimeoutMillis, at least a few seconds) until
//     this broker's metadata no longer has the topics.
//
// Version notes:
//   - v1: ThrottleMillis; v4: flexible; v5: ErrorMessage; v6: topics by id.

func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(r *request) reply {
	req := r.body.(*kmsg.DeleteTopicsRequest)
	return r.s.forwardAdmin(req, req.TimeoutMillis, func(ctx context.Context, resp kmsg.Response) {
		for _, st := range resp.(*kmsg.DeleteTopicsResponse).Topics {
			if st.ErrorCode == 0 {
				r.s.awaitGone(ctx, uuid.UUID(st.TopicID))
			}
		}
	})
}

// awaitGone waits until this broker's metadata no longer has topic id.
func (s *Server) awaitGone(ctx context.Context, id uuid.UUID) {
	_ = s.await(ctx, func() bool {
		_, ok := s.store.Image().TopicByID(id)
		return !ok
	})
}
