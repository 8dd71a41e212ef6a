package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
)

// WriteTxnMarkers: v0-2
//
// Behaviour:
//   - Sent by a transaction coordinator to a partition's leader: appends
//     each marker (a control batch: commit or abort, the producer id and
//     epoch, the coordinator's epoch) to each named partition this broker
//     leads, and answers once each is committed (below the high
//     watermark), or after a few seconds with REQUEST_TIMED_OUT for those
//     that are not, which the coordinator retries.
//   - Per partition: NOT_LEADER_OR_FOLLOWER where this broker does not
//     lead it, UNKNOWN_TOPIC_OR_PARTITION for one that does not exist,
//     INVALID_PRODUCER_EPOCH for a marker older than the producer's epoch
//     there, TRANSACTION_COORDINATOR_FENCED for one from a coordinator
//     older than the last that wrote a marker for the producer.
//   - A marker for __consumer_offsets goes through the partition's group
//     coordinator, which makes the transaction's offsets visible or drops
//     them.
//
// Version notes:
//   - v1: flexible; v2: TransactionVersion (not needed here: the marker's
//     epoch says it all).

func init() { register(27, 0, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(r *request) reply {
	req := r.body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, markerWait)
		defer cancel()
		for _, mk := range req.Markers {
			m := txnMarker{batch.Producer{ID: mk.ProducerID, Epoch: mk.ProducerEpoch},
				batch.Marker{Commit: mk.Committed, CoordinatorEpoch: mk.CoordinatorEpoch}}
			tps := txnPartitions(mk.Topics, func(t kmsg.WriteTxnMarkersRequestMarkerTopic) (string, []int32) {
				return t.Topic, t.Partitions
			})
			codes := s.writeMarkers(ctx, m, tps)
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = mk.ProducerID
			for i, tp := range tps {
				if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					t.Topic = tp.Topic
					rm.Topics = append(rm.Topics, t)
				}
				p := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				p.Partition, p.ErrorCode = tp.Partition, codes[i]
				rm.Topics[len(rm.Topics)-1].Partitions = append(rm.Topics[len(rm.Topics)-1].Partitions, p)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp
	})
}
