package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
)

// Transactions: each transactional id belongs to one partition of the
// internal __transaction_state topic, found as a group's partition is
// (coordSet), and the broker leading it is the id's transaction coordinator
// (package txn). The topic is created on the first FindCoordinator for a
// transactional id. A coordinator writes the markers that end a
// transaction to the leaders of its partitions (WriteTxnMarkers, or in
// process when it leads them too), and a partition leader asks the
// coordinator to verify the first write of a transaction (KIP-890:
// AddPartitionsToTxn with VerifyOnly, or in process).

const txnTopic = cluster.TransactionStateTopic

type txnSet = coordSet[*txn.Coordinator]

func newTxnSet(s *Server) *txnSet {
	return newCoordSet(s, txnTopic, "transaction coordinator", s.openTxnCoordinator)
}

func (s *Server) openTxnCoordinator(p *partition.Partition) (*txn.Coordinator, error) {
	c, err := txn.Open(txn.Config{
		Log:              coordLog{p, s.cfg.Clock},
		Clock:            s.cfg.Clock,
		Logger:           s.log.With("component", "transactions", "partition", p.Index()),
		Markers:          markerWriter{s},
		NewProducerID:    s.life.nextPID,
		CoordinatorEpoch: p.LeaderEpoch(),
		MaxTimeout:       s.cfg.Cluster.TxnMaxTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("transactions: %w", err)
	}
	return c, nil
}

// ensureTxnTopic asks the controller to create __transaction_state unless
// the metadata has it.
func (s *Server) ensureTxnTopic(ctx context.Context) error {
	return s.ensureInternalTopic(ctx, txnTopic, s.cfg.Cluster.TxnTopicPartitions, s.cfg.Cluster.TxnTopicReplicationFactor)
}

// txnCoordinator is the coordinator of transactional id here, or the code
// to answer (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE).
func (s *Server) txnCoordinator(id string) (*txn.Coordinator, int16) {
	return s.txns.forKey(id)
}

// markerWriter writes a transaction's markers: in process to the
// partitions this broker leads, with WriteTxnMarkers to the others'
// leaders, as the metadata names them.
type markerWriter struct{ s *Server }

// markerWait bounds how long one attempt waits for the markers it wrote to
// be committed.
const markerWait = 5 * time.Second

func (w markerWriter) Write(ctx context.Context, job txn.MarkerJob) error {
	s := w.s
	img := s.store.Image()
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range job.Partitions {
		t, ok := img.Topic(tp.Topic)
		if !ok || int(tp.Partition) >= len(t.Partitions) {
			continue // deleted: no marker to write
		}
		leader := t.Partitions[tp.Partition].Leader
		if leader < 0 {
			return fmt.Errorf("%s has no leader", tp)
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	ctx, cancel := withTimeout(ctx, s.cfg.Clock, markerWait)
	defer cancel()
	m := markerOf(job)
	return eachLeader(ctx, byLeader, func(ctx context.Context, leader int32, tps []txn.TopicPartition) ([]int16, error) {
		if leader == s.cfg.NodeID {
			return s.writeMarkers(ctx, m, tps), nil
		}
		return w.remote(ctx, leader, job, tps)
	}, func(tp txn.TopicPartition, code int16) {
		if code == kerr.InvalidProducerEpoch.Code {
			s.log.Info("a transaction marker found a newer epoch", "partition", tp.String(), "producer_id", job.ProducerID)
		}
	})
}

// eachLeader writes a transaction's markers with write, to every leader of
// byLeader at once: the transaction is over (and its producer's next one
// waits) when the slowest partition has its marker, so one replication
// round for all of them, not one per leader. seen is told each code; the
// error joins every partition's that failed (txn.MarkerResult).
func eachLeader(ctx context.Context, byLeader map[int32][]txn.TopicPartition,
	write func(context.Context, int32, []txn.TopicPartition) ([]int16, error), seen func(txn.TopicPartition, int16)) error {
	leaders := slices.Sorted(maps.Keys(byLeader))
	codes := make([][]int16, len(leaders))
	errs := make([]error, len(leaders))
	var wg sync.WaitGroup
	for i, leader := range leaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if codes[i], err = write(ctx, leader, byLeader[leader]); err != nil {
				codes[i], errs[i] = nil, fmt.Errorf("broker %d: %w", leader, err)
			}
		}()
	}
	wg.Wait()
	for i, leader := range leaders {
		tps := byLeader[leader]
		for j, code := range codes[i] {
			seen(tps[j], code)
			if err := txn.MarkerResult(tps[j], code); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// remote sends job's markers for tps to broker id.
func (w markerWriter) remote(ctx context.Context, id int32, job txn.MarkerJob, tps []txn.TopicPartition) ([]int16, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = job.ProducerID, job.Epoch, job.Commit, job.CoordinatorEpoch
	for _, tp := range tps {
		if n := len(mk.Topics); n == 0 || mk.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			mk.Topics = append(mk.Topics, t)
		}
		t := &mk.Topics[len(mk.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, mk)
	resp, err := w.s.peers.request(ctx, id, req)
	if err != nil {
		return nil, err
	}
	codes := map[txn.TopicPartition]int16{}
	for _, m := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				codes[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	out := make([]int16, len(tps))
	for i, tp := range tps {
		code, ok := codes[tp]
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		out[i] = code
	}
	return out, nil
}

// txnMarker is one transaction's marker as a leader writes it.
type txnMarker struct {
	pr batch.Producer
	m  batch.Marker
}

func markerOf(job txn.MarkerJob) txnMarker {
	return txnMarker{batch.Producer{ID: job.ProducerID, Epoch: job.Epoch}, batch.Marker{Commit: job.Commit, CoordinatorEpoch: job.CoordinatorEpoch}}
}

// writeMarkers appends m to each of tps that this broker leads and waits,
// within ctx, until each is committed; it returns each partition's code.
func (s *Server) writeMarkers(ctx context.Context, m txnMarker, tps []txn.TopicPartition) []int16 {
	codes := make([]int16, len(tps))
	ends := make([]int64, len(tps))
	parts := make([]*partition.Partition, len(tps))
	for i, tp := range tps {
		p, err := s.leaderOf(tp.Topic, tp.Partition)
		if err == nil {
			ends[i], err = s.appendMarker(ctx, p, m)
		}
		if err != nil {
			codes[i] = errorCode(nil, err)
			continue
		}
		parts[i] = p
	}
	for i, p := range parts {
		if p == nil {
			continue
		}
		if err := p.WaitHighWatermark(ctx, ends[i]); err != nil {
			codes[i] = errorCode(ctx, err)
		}
	}
	return codes
}

// appendMarker appends m to p. A marker in __consumer_offsets goes
// through the group coordinator of the partition, which makes the offsets
// committed in the transaction visible, or drops them.
func (s *Server) appendMarker(ctx context.Context, p *partition.Partition, m txnMarker) (int64, error) {
	appendMarker := func() (int64, error) { return p.AppendMarker(m.pr, m.m) }
	if p.Topic() != offsetsTopic {
		return appendMarker()
	}
	c, ok := s.groups.forPartition(p.Index())
	if !ok {
		return 0, fmt.Errorf("no group coordinator of %s-%d here: %w", offsetsTopic, p.Index(), kerr.NotLeaderForPartition)
	}
	return c.WriteMarker(ctx, m.pr.ID, m.m.Commit, appendMarker)
}
