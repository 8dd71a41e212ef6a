package broker

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// DeleteRecords: v0-2
//
// Behaviour (KIP-107):
//   - Sent to each partition's leader, as clients do (kadm groups the
//     partitions by leader); a broker that does not lead a partition
//     answers NOT_LEADER_OR_FOLLOWER for it, an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION. Internal topics (__consumer_offsets):
//     INVALID_TOPIC_EXCEPTION, as in Kafka; the group coordinator trims
//     its own log.
//   - Offset -1 means the high watermark; an offset above the high
//     watermark, or below -1, is OFFSET_OUT_OF_RANGE (records not yet
//     committed are never deleted); one at or below the log start deletes
//     nothing.
//   - The leader moves its log start first (durable when it is done, so a
//     restart keeps it), then the answer waits, up to TimeoutMillis, until
//     every replica of the ISR has its log start there too: followers
//     learn it from the LogStartOffset of their fetch responses (a parked
//     follower fetch is answered at once for it) and say theirs in their
//     next fetch. Past the timeout: REQUEST_TIMED_OUT with the low
//     watermark as it is then (the leader's log start has moved all the
//     same, and the followers still follow it). TimeoutMillis <= 0 answers
//     at once, REQUEST_TIMED_OUT unless the ISR already has the start.
//     A stopped follower holds the answer until it leaves the ISR (the
//     broker's fencing or replica.lag.time.max.ms). A leadership lost
//     while waiting: NOT_LEADER_OR_FOLLOWER.
//   - LowWatermark is the lowest log start over the ISR once it reached
//     the requested offset: what ListOffsets(earliest) answers and where a
//     consumer reset to earliest starts, on every replica. A batch is
//     stored, replicated and fetched whole here, so an offset inside a
//     batch keeps that batch: the log starts at the batch's first offset,
//     below the offset asked for, and LowWatermark says so (Kafka can
//     start a log inside a batch and answers the offset itself). The
//     records of that batch below the offset stay readable; a Fetch below
//     the log start is OFFSET_OUT_OF_RANGE.
//
// Version notes:
//   - v1: same as v0 (throttling after the response); v2: flexible.

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(r *request) reply {
	req := r.body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
		}
	}
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := deleteRecordsTimeout(ctx, r.s, req.TimeoutMillis)
		defer cancel()
		var wg sync.WaitGroup
		for i, rt := range req.Topics {
			for j, rp := range rt.Partitions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.s.deleteRecords(ctx, rt.Topic, rp.Partition, rp.Offset, &resp.Topics[i].Partitions[j])
				}()
			}
		}
		wg.Wait()
		return resp
	})
}

// deleteRecordsTimeout is the request's wait: TimeoutMillis on the
// injected clock, or one already over for a timeout <= 0 (Kafka's
// purgatory then answers at once).
func deleteRecordsTimeout(ctx context.Context, s *Server, ms int32) (context.Context, context.CancelFunc) {
	if ms <= 0 {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errTimedOut)
		return ctx, func() {}
	}
	return withTimeout(ctx, s.cfg.Clock, time.Duration(ms)*time.Millisecond)
}

// deleteRecords moves one partition's log start and waits for its ISR,
// filling sp.
func (s *Server) deleteRecords(ctx context.Context, topic string, index int32, offset int64, sp *kmsg.DeleteRecordsResponseTopicPartition) {
	if cluster.Internal(topic) {
		sp.ErrorCode = kerr.InvalidTopicException.Code
		return
	}
	p, err := s.leaderOf(topic, index)
	if err == nil {
		sp.LowWatermark, err = p.DeleteRecords(ctx, offset)
	}
	if err != nil {
		sp.ErrorCode = errorCode(ctx, err)
		if sp.ErrorCode == kerr.KafkaStorageError.Code {
			s.log.Error("delete records failed", "topic", topic, "partition", index, "err", err)
		}
		if sp.ErrorCode != kerr.RequestTimedOut.Code {
			sp.LowWatermark = -1
		}
	}
}
