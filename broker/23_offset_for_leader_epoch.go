package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch: v0-4
//
// Behaviour:
//   - For each partition, from its leader's epoch cache (KIP-101, KIP-279):
//     the largest leader epoch at or below the one asked for and the offset
//     where it ends on the leader (the log end for the current epoch); an
//     epoch below everything the cache knows gets the first epoch it knows
//     and where that starts, an empty cache UNDEFINED_EPOCH (-1) and offset
//     -1. Consumers use it to detect a log truncated under them (KIP-320);
//     followers here use Fetch's diverging epoch instead, but may ask too
//     (ReplicaID >= 0, v3+).
//   - At a broker that does not lead the partition: NOT_LEADER_OR_FOLLOWER;
//     unknown: UNKNOWN_TOPIC_OR_PARTITION; CurrentLeaderEpoch (v2+) older
//     than the leader's: FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH.
//
// Version notes:
//   - v1: the epoch in the answer; v2: CurrentLeaderEpoch; v3: ReplicaID;
//     v4: flexible.

func init() { register(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(r *request) reply {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			p, err := r.s.leaderOf(rt.Topic, rp.Partition)
			if err == nil {
				err = checkEpoch(req.Version >= 2, rp.CurrentLeaderEpoch, p)
			}
			if err != nil {
				sp.ErrorCode = errorCode(nil, err)
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			if sp.ErrorCode == kerr.KafkaStorageError.Code {
				r.s.log.Error("OffsetForLeaderEpoch", "topic", rt.Topic, "partition", rp.Partition, "err", err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
