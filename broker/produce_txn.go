package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/txn"
)

// produceVerify is a partition's batch that opens its producer's
// transaction there and waits for the coordinator's word (KIP-890).
type produceVerify struct {
	topic   string
	part    *partition.Partition
	records []byte
	need    *partition.VerifyNeeded
	resp    *kmsg.ProduceResponseTopicPartition
}

// verifyWait bounds how long a produce's ordering phase waits for the
// transaction coordinator to verify its partitions.
const verifyWait = 5 * time.Second

// concurrentBackoffMin and concurrentBackoffMax bound the pause between
// two tries of a transactional write that found its producer's last
// transaction still being decided (Kafka's
// add.partitions.to.txn.retry.backoff.ms and .max.ms, 20 and 100 ms).
// Shorter than Kafka's: the last transaction settles in a few replication
// rounds, a few milliseconds under sync=always, and every producer's next
// transaction waits for it, so the pause is most of a transaction's cost.
const (
	concurrentBackoffMin = 2 * time.Millisecond
	concurrentBackoffMax = 20 * time.Millisecond
)

// whileConcurrent calls try again, backing off, while it reports
// CONCURRENT_TRANSACTIONS, for up to verifyWait; wake, when not nil, is
// taken before each try and ends the pause early once closed (the event
// that makes the next try worth it, such as a marker landing). Under
// KIP-890's second part a producer begins its next transaction as soon as
// the last is decided, so its first write in a partition can reach the
// partition before the last one's marker, or the coordinator before the
// last one's markers are all in: a few milliseconds. Answering the client
// would cost it its retry backoff and a metadata refresh (seconds, with
// franz-go); Kafka's brokers retry inside too. The connection's reader
// waits meanwhile, which keeps the producer's later requests behind this
// one.
func (s *Server) whileConcurrent(try func() bool, wake func() <-chan struct{}) {
	deadline := s.cfg.Clock.Now().Add(verifyWait)
	for backoff := concurrentBackoffMin; ; backoff = min(2*backoff, concurrentBackoffMax) {
		var woken <-chan struct{}
		if wake != nil {
			woken = wake()
		}
		if !try() || !s.cfg.Clock.Now().Before(deadline) {
			return
		}
		t := s.cfg.Clock.NewTimer(backoff)
		select {
		case <-t.C():
		case <-woken:
		case <-s.quit:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// appendVerified asks the transaction coordinator about every partition of
// vs at once, appends the batches of those in the transaction and answers
// the others; it returns the waits of what it appended.
func (s *Server) appendVerified(req *kmsg.ProduceRequest, vs []produceVerify) []produceWait {
	if len(vs) == 0 {
		return nil
	}
	ctx, cancel := withTimeout(s.connCtx, s.cfg.Clock, verifyWait)
	defer cancel()
	tps := make([]txn.TopicPartition, len(vs))
	for i, v := range vs {
		tps[i] = txn.TopicPartition{Topic: v.topic, Partition: v.part.Index()}
	}
	// One producer per request: every batch of it carries the same id and
	// epoch (the partitions refuse any other).
	pr := txn.Producer{ID: vs[0].need.ProducerID, Epoch: vs[0].need.Epoch, Fenced: kerr.InvalidProducerEpoch.Code}
	var codes []int16
	// The coordinator holds an add while the markers are under way
	// (txn.Request.Wait): a CONCURRENT_TRANSACTIONS here is one it gave up
	// on, or a verification's.
	s.whileConcurrent(func() bool {
		codes = s.verifyTxn(ctx, *req.TransactionID, pr, tps, req.Version >= 12)
		return slices.Contains(codes, kerr.ConcurrentTransactions.Code)
	}, nil)
	var waits []produceWait
	for i, v := range vs {
		if code := codes[i]; code != 0 || v.need.ProducerID != pr.ID || v.need.Epoch != pr.Epoch {
			v.part.DropGuard(v.need.ProducerID, v.need.Guard)
			err := fmt.Errorf("partition %s not verified in producer %d's transaction: %w", tps[i], v.need.ProducerID, kerr.ErrorForCode(code))
			if code == 0 {
				err = fmt.Errorf("one produce for several producers: %w", kerr.InvalidRecord)
			}
			s.setProduceErr(req, v.topic, v.resp, err)
			continue
		}
		app, err := v.part.AppendVerified(v.records, v.need.Guard)
		if errors.Is(err, partition.ErrVerificationVoided) {
			app, err = s.reverify(ctx, req, v, pr, tps[i])
		}
		if err != nil {
			s.setProduceErr(req, v.topic, v.resp, err)
			continue
		}
		waits = append(waits, s.produced(v.part, app, v.resp))
	}
	return waits
}

// reverify verifies v's batch again and appends it: a marker voided its
// first verification. If the marker ended v's own transaction, the
// coordinator now refuses it (fenced, or not in an ongoing transaction);
// if it ended an earlier one, the write goes in.
func (s *Server) reverify(ctx context.Context, req *kmsg.ProduceRequest, v produceVerify, pr txn.Producer, tp txn.TopicPartition) (partition.Appended, error) {
	app, err := v.part.Append(v.records)
	var need *partition.VerifyNeeded
	if !errors.As(err, &need) {
		return app, err
	}
	code := s.verifyTxn(ctx, *req.TransactionID, pr, []txn.TopicPartition{tp}, req.Version >= 12)[0]
	if code != 0 {
		v.part.DropGuard(need.ProducerID, need.Guard)
		return app, fmt.Errorf("partition %s not verified in producer %d's transaction: %w", tp, need.ProducerID, kerr.ErrorForCode(code))
	}
	return v.part.AppendVerified(v.records, need.Guard)
}

// verifyTxn asks transactional id's coordinator whether each of tps is in
// pr's ongoing transaction, or, with add (KIP-890's second part), to add
// them to it: in process when it runs here, otherwise with
// AddPartitionsToTxn (VerifyOnly unless add) to the broker that leads the
// id's partition of __transaction_state. Codes a producer would only retry
// the wrong way (the coordinator moving or loading) come back as
// NOT_ENOUGH_REPLICAS, which every client retries, as Kafka answers them.
func (s *Server) verifyTxn(ctx context.Context, id string, pr txn.Producer, tps []txn.TopicPartition, add bool) []int16 {
	codes := make([]int16, len(tps))
	if c, _ := s.txnCoordinator(id); c != nil {
		if add {
			for i, code := 0, c.AddForWrite(id, pr, tps); i < len(codes); i++ {
				codes[i] = code
			}
		} else {
			codes = c.Verify(id, pr, tps)
		}
	} else if err := s.verifyRemote(ctx, id, pr, tps, add, codes); err != nil {
		s.log.Debug("transaction verification failed", "transactional_id", id, "err", err)
		for i := range codes {
			codes[i] = kerr.NotEnoughReplicas.Code
		}
	}
	for i, code := range codes {
		codes[i] = txn.VerifyAnswer(code, add)
	}
	return codes
}

// verifyRemote is verifyTxn's question sent to the coordinator's broker.
func (s *Server) verifyRemote(ctx context.Context, id string, pr txn.Producer, tps []txn.TopicPartition, add bool, codes []int16) error {
	img := s.store.Image()
	t, ok := img.Topic(txnTopic)
	if !ok {
		return fmt.Errorf("no %s topic", txnTopic)
	}
	leader := t.Partitions[partitionFor(id, int32(len(t.Partitions)))].Leader
	if leader < 0 {
		return fmt.Errorf("no coordinator for %q", id)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pr.ID, pr.Epoch, !add
	for _, tp := range tps {
		if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic = tp.Topic
			rt.Topics = append(rt.Topics, tt)
		}
		rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, rt)
	raw, err := s.peers.request(ctx, leader, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	got := map[txn.TopicPartition]int16{}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				got[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range tps {
		code, ok := got[tp]
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		codes[i] = code
	}
	return nil
}
