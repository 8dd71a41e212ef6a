package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/txn"
)

// TxnOffsetCommit: v0-5
//
// Behaviour:
//   - At the group's coordinator (NOT_COORDINATOR elsewhere): the offsets
//     are written to __consumer_offsets inside the producer's transaction
//     and become the group's offsets only when the transaction commits
//     (its marker reaches the partition); an abort drops them. Until then
//     OffsetFetch does not return them, and one with RequireStable gets
//     UNSTABLE_OFFSET_COMMIT for those partitions.
//   - The group's __consumer_offsets partition must be in the producer's
//     transaction (AddOffsetsToTxn), checked with its coordinator as a
//     produce's first write is (KIP-890): INVALID_TXN_STATE if it is not,
//     PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v3) for an old
//     epoch, INVALID_PRODUCER_ID_MAPPING for another producer id. From v5
//     (KIP-890's second part) the partition is added to the transaction
//     here instead: clients of transaction.version 2 send no
//     AddOffsetsToTxn.
//   - Fencing of group members (v3+, when a member id or generation is
//     given): ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID.
//     A partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION; offset
//     metadata over 4096 bytes: OFFSET_METADATA_TOO_LARGE.
//
// Version notes:
//   - v2: CommittedLeaderEpoch; v3: PRODUCER_FENCED, member id, generation
//     and instance id, flexible; v4: no change for this broker; v5: adds
//     the partition to the transaction.

func init() { register(28, 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(r *request) reply {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	s := r.s
	answer := func(code int16) reply {
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return done(resp)
	}
	c, code := s.groups.forKey(req.Group)
	if c == nil {
		return answer(code)
	}
	t, ok := s.store.Image().Topic(offsetsTopic)
	if !ok {
		return answer(kerr.CoordinatorNotAvailable.Code)
	}
	tp := txn.TopicPartition{Topic: offsetsTopic, Partition: partitionFor(req.Group, int32(len(t.Partitions)))}
	pr := txn.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch, Fenced: fencedCode(req.Version, 3)}
	return later(func(ctx context.Context) kmsg.Response {
		vctx, cancel := withTimeout(ctx, s.cfg.Clock, verifyWait)
		code := s.verifyTxn(vctx, req.TransactionalID, pr, []txn.TopicPartition{tp}, req.Version >= 5)[0]
		cancel()
		switch code {
		case 0:
		case kerr.InvalidProducerEpoch.Code:
			code = pr.Fenced
			fallthrough
		default:
			if code == kerr.NotEnoughReplicas.Code {
				code = kerr.CoordinatorLoadInProgress.Code // retriable here
			}
			answer(code)
			return resp
		}
		for _, t := range c.TxnOffsetCommit(req) {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}
