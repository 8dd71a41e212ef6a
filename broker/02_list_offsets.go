package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// ListOffsets: v1-7
//
// Behaviour:
//   - Timestamp -2: the log start offset; -1: the high watermark (the end a
//     consumer can read to); -3 (v7+): the offset and timestamp of the
//     record with the largest timestamp; any other timestamp: the first
//     offset whose batch holds a timestamp at or after it, or the high
//     watermark with timestamp -1 when there is none.
//   - read_committed (v2+): -1 is the last stable offset, and no offset
//     found by timestamp is past it.
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
//   - v4+: CurrentLeaderEpoch fencing as in Fetch; the response carries our
//     leader epoch.
//
// Version notes:
//   - v1: single offset per partition; v2: IsolationLevel; v4: leader
//     epochs; v6: flexible; v7: max timestamp (-3).

func init() { register(2, 1, 7, handleListOffsets) }

func handleListOffsets(r *request) reply {
	req := r.body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := r.s.listOffset(req.Version, req.IsolationLevel == 1, rt.Topic, &rp, &sp); err != nil {
				sp.ErrorCode = errorCode(nil, err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}

func (s *Server) listOffset(version int16, committed bool, topic string, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	p, err := s.leaderOf(topic, rp.Partition)
	if err != nil {
		return err
	}
	if err := checkEpoch(version >= 4, rp.CurrentLeaderEpoch, p); err != nil {
		return err
	}
	if rp.Timestamp == -3 && version < 7 {
		return kerr.UnsupportedVersion
	}
	offset, ts, err := p.ListOffset(rp.Timestamp)
	if err != nil {
		return err
	}
	if lso := p.LastStableOffset(); committed && rp.Timestamp != partition.TimestampEarliest && offset > lso {
		offset, ts = lso, -1
	}
	sp.Offset, sp.Timestamp = offset, ts
	if version >= 4 {
		sp.LeaderEpoch = p.LeaderEpoch()
	}
	return nil
}
