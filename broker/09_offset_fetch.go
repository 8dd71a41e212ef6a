package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch: v1-7
//
// Behaviour:
//   - One group per request. Null topics (v2+): every partition the group
//     committed. A partition with no commit, or a group that does not
//     exist: offset -1, no error.
//   - Returns durable commits only (see OffsetCommit). RequireStable (v7)
//     needs nothing: there are no transactional offsets.
//   - A group id over the limit: INVALID_GROUP_ID (top level from v2, per
//     partition in v1).
//
// Version notes:
//   - v2: top-level ErrorCode, null topics; v3: ThrottleMillis; v5:
//     LeaderEpoch; v6: flexible; v7: RequireStable. v8+ (several groups per
//     request) is not advertised.

func init() { register(9, 1, 7, handleOffsetFetch) }

func handleOffsetFetch(r *request) reply {
	req := r.body.(*kmsg.OffsetFetchRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = code
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return done(resp)
	}
	return done(c.OffsetFetch(req))
}
