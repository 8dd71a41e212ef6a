package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers: v0
//
// Behaviour:
//   - For each partition this broker leads: the producers its producer
//     state knows (idempotent and transactional), each with its epoch, the
//     last sequence it wrote (-1 if only the broker wrote for it: markers,
//     a group's offsets), when it last wrote (the broker's clock), the
//     epoch of the coordinator of its last marker, and the first offset of
//     its transaction open there (-1 when none is). Elsewhere
//     NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION for one that does
//     not exist.

func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(r *request) reply {
	req := r.body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, i := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = i
			p, err := r.s.leaderOf(rt.Topic, i)
			if err != nil {
				sp.ErrorCode = errorCode(nil, err)
				sp.ErrorMessage = errorMessage(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, e := range p.ProducerState().Entries() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = e.ID, int32(e.Epoch), -1
				if n := len(e.Batches); n > 0 {
					ap.LastSequence = e.Batches[n-1].LastSeq
				}
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.LastActiveMs, e.CoordinatorEpoch, e.TxnFirst
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
