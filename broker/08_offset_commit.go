package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit: v2-8
//
// Behaviour:
//   - Commits of a group member are fenced like Kafka's: current member of
//     the current generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//     FENCED_INSTANCE_ID), not while the group waits for SyncGroup
//     (REBALANCE_IN_PROGRESS). Generation -1 with no member id is a client
//     that assigns partitions itself: accepted while the group has no
//     members (the group is created if needed).
//   - A partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION; offset
//     metadata over 4096 bytes: OFFSET_METADATA_TOO_LARGE; the rest of the
//     request is committed.
//   - The commit is appended to __consumer_offsets in this connection's
//     request order and answered once durable; only then does OffsetFetch
//     see it.
//   - RetentionTimeMillis (v2-4) is ignored: offsets of a group with no
//     members expire 7 days after it emptied (or after the commit, if later),
//     as Kafka's default offsets.retention.minutes.
//
// Version notes:
//   - v3: ThrottleMillis; v6: CommittedLeaderEpoch; v7: InstanceID; v8:
//     flexible.

func init() { register(8, 2, 8, handleOffsetCommit) }

func handleOffsetCommit(r *request) reply {
	req := r.body.(*kmsg.OffsetCommitRequest)
	c, code := r.s.groups.forKey(req.Group)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return done(resp)
	}
	wait := c.StartOffsetCommit(req)
	return later(func(context.Context) kmsg.Response { return wait() })
}
