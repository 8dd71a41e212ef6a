package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
)

// Produce: v0-12 advertised, v3-12 served
//
// Behaviour:
//   - v0-2 (message sets, magic 0 and 1) are advertised only so that
//     librdkafka 2.0.2 keeps compressing (it stops when the advertised
//     minimum is 3); a request at those versions gets UNSUPPORTED_VERSION on
//     every partition.
//   - acks=-1 with the partition's ISR below min.insync.replicas:
//     NOT_ENOUGH_REPLICAS, nothing appended; once appended, a batch whose
//     ISR shrank below it while waiting: NOT_ENOUGH_REPLICAS_AFTER_APPEND;
//     at a broker that does not lead the partition: NOT_LEADER_OR_FOLLOWER,
//     and a leader that loses its leadership while a batch waits fails it
//     with NOT_LEADER_OR_FOLLOWER (the producer retries at the new leader,
//     which has the producer state: a batch that made it is answered with
//     its offsets, not stored twice). A partition the metadata places here
//     that the reconciler is still opening (a topic just created) is
//     waited for, up to half a second from the start of its round, rather
//     than refused: so is a follower's fetch of it.
//   - The ordering phase, on the connection's reader, appends each
//     partition's records in request order (Partition.Append returns once
//     the batch has its offsets), so a pipelined idempotent producer's
//     sequences arrive in order. The waiting phase runs on its own
//     goroutine: acks=1 waits until the batch is durable under the sync
//     policy, acks=-1 until the high watermark passes it; both end with
//     REQUEST_TIMED_OUT after the request's TimeoutMillis (<= 0: no limit).
//   - acks=0: appended the same way, and no response at all; if a
//     partition fails, the connection is closed (as Kafka does), which
//     makes the client refresh its metadata.
//   - Any other acks value: INVALID_REQUIRED_ACKS on every partition.
//   - Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. As in Kafka, a produce
//     never creates a topic (a deleted one would come back under a
//     producer that still writes to it); clients create one through a
//     Metadata request that allows it, as librdkafka's producers and
//     franz-go's with AllowAutoTopicCreation do.
//   - Internal topics (__consumer_offsets) are written by the broker only:
//     a client's produce to one gets INVALID_TOPIC_EXCEPTION.
//   - Transactional produce (TransactionID set): the batches are
//     transactional. The first batch of a producer's transaction in a
//     partition is appended only once the transaction coordinator says the
//     partition is in that ongoing transaction (KIP-890; in process, or
//     AddPartitionsToTxn with VerifyOnly): INVALID_TXN_STATE if it is not,
//     NOT_ENOUGH_REPLICAS (retriable) while the coordinator cannot say.
//     The reader waits for that answer, so the connection's later requests
//     stay in order behind it. From v12 (KIP-890's second part) the
//     leader asks the coordinator to add the partition to the transaction
//     instead (a client of transaction.version 2 sends no
//     AddPartitionsToTxn). A transactional batch in a produce without a
//     TransactionID: INVALID_RECORD.
//   - Batch errors come from the log layer as Kafka codes: CORRUPT_MESSAGE
//     (CRC, counts, lengths), INVALID_RECORD, MESSAGE_TOO_LARGE,
//     OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH; a retried
//     duplicate gets its original offsets.
//
// Version notes:
//   - v2: LogAppendTime; v5: LogStartOffset; v8: ErrorMessage per
//     partition; v9: flexible; v12: transactions add their partitions
//     (KIP-890). v13 (topic ids) is not served.

func init() { register(0, 0, 12, handleProduce) }

// produceWait is one appended partition-batch awaiting its acknowledgement.
type produceWait struct {
	part *partition.Partition
	end  int64 // offset just past the batch
	resp *kmsg.ProduceResponseTopicPartition
}

func handleProduce(r *request) reply {
	req := r.body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	var refuse *kerr.Error
	switch {
	case req.Version < 3:
		refuse = kerr.UnsupportedVersion
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		refuse = kerr.InvalidRequiredAcks
	}

	var waits []produceWait
	var verifies []produceVerify
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
		parts := resp.Topics[len(resp.Topics)-1].Partitions
		topicRefuse := refuse
		if cluster.Internal(rt.Topic) && topicRefuse == nil {
			topicRefuse = kerr.InvalidTopicException
		}
		for i, rp := range rt.Partitions {
			sp := &parts[i]
			sp.Default()
			sp.Partition = rp.Partition
			if topicRefuse != nil {
				sp.ErrorCode = topicRefuse.Code
				continue
			}
			w, v, ok := r.s.appendPartition(req, rt.Topic, rp, sp)
			if ok {
				waits = append(waits, w)
			}
			if v != nil {
				verifies = append(verifies, *v)
			}
		}
	}
	waits = append(waits, r.s.appendVerified(req, verifies)...)
	if req.Acks == 0 {
		return produceNoAck(resp)
	}
	if len(waits) == 0 {
		return done(resp)
	}
	return later(func(ctx context.Context) kmsg.Response {
		r.s.awaitProduce(ctx, req, waits)
		return resp
	})
}

// produceNoAck is the reply to acks=0: nothing, unless a partition failed.
// Then, as Kafka does, the connection is closed: it is the only way to tell
// such a client to refresh its metadata.
func produceNoAck(resp *kmsg.ProduceResponse) reply {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fail(fmt.Errorf("acks=0 produce to %s/%d failed: %v", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode)))
			}
		}
	}
	return reply{none: true}
}

// appendPartition runs the ordering phase for one partition: it fills sp
// and reports whether there is an acknowledgement to wait for, or returns
// the verification the batch must wait for (transactions, KIP-890).
func (s *Server) appendPartition(req *kmsg.ProduceRequest, topic string, rp kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) (produceWait, *produceVerify, bool) {
	p, err := s.partition(topic, rp.Partition)
	if err != nil {
		s.setProduceErr(req, topic, sp, err)
		return produceWait{}, nil, false
	}
	if req.Acks == -1 {
		// NOT_ENOUGH_REPLICAS before anything is appended when the ISR is
		// below min.insync.replicas.
		if err := p.CheckProduce(-1); err != nil {
			s.setProduceErr(req, topic, sp, err)
			return produceWait{}, nil, false
		}
	}
	app, err := p.Append(rp.Records)
	if req.TransactionID != nil && errors.Is(err, kerr.ConcurrentTransactions) {
		// The producer's last transaction's marker is on its way here:
		// tried again as it lands.
		s.whileConcurrent(func() bool {
			app, err = p.Append(rp.Records)
			return errors.Is(err, kerr.ConcurrentTransactions)
		}, p.MarkerLanded)
	}
	var verify *partition.VerifyNeeded
	switch {
	case errors.As(err, &verify) && req.TransactionID == nil:
		p.DropGuard(verify.ProducerID, verify.Guard)
		s.setProduceErr(req, topic, sp, fmt.Errorf("a transactional batch in a produce without a transactional id: %w", kerr.InvalidRecord))
		return produceWait{}, nil, false
	case errors.As(err, &verify):
		return produceWait{}, &produceVerify{topic: topic, part: p, records: rp.Records, need: verify, resp: sp}, false
	case err != nil:
		s.setProduceErr(req, topic, sp, err)
		return produceWait{}, nil, false
	}
	return s.produced(p, app, sp), nil, true
}

// produced fills sp with where the batch went and returns its wait.
func (s *Server) produced(p *partition.Partition, app partition.Appended, sp *kmsg.ProduceResponseTopicPartition) produceWait {
	sp.BaseOffset = app.BaseOffset
	sp.LogAppendTime = app.LogAppendTime
	sp.LogStartOffset = app.LogStartOffset
	return produceWait{part: p, end: app.LastOffset + 1, resp: sp}
}

// setProduceErr answers one partition of a produce with err.
func (s *Server) setProduceErr(req *kmsg.ProduceRequest, topic string, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode = errorCode(nil, err)
	if req.Version >= 8 {
		sp.ErrorMessage = errorMessage(err)
	}
	if sp.ErrorCode == kerr.KafkaStorageError.Code {
		s.log.Error("produce failed", "topic", topic, "partition", sp.Partition, "err", err)
	}
}

// awaitProduce is the waiting phase: it sets each partition's error code
// once its batch is acknowledged under req.Acks, or the request times out.
func (s *Server) awaitProduce(ctx context.Context, req *kmsg.ProduceRequest, waits []produceWait) {
	ctx, cancel := withTimeout(ctx, s.cfg.Clock, time.Duration(req.TimeoutMillis)*time.Millisecond)
	defer cancel()
	start := s.cfg.Clock.Now()
	for _, w := range waits {
		var err error
		if req.Acks == 1 {
			err = w.part.WaitDurable(ctx, w.end)
		} else {
			err = w.part.WaitHighWatermark(ctx, w.end)
		}
		if err != nil {
			w.resp.ErrorCode = errorCode(ctx, err)
			if req.Version >= 8 {
				w.resp.ErrorMessage = errorMessage(err)
			}
		}
	}
	s.metrics.durableWait.Observe(s.cfg.Clock.Now().Sub(start).Seconds())
}
