package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/replication"
)

// A follower's fetch (Fetch with a replica id): each partition is served
// by its leader's replication state machine (Partition.ServeFollower), up
// to the leader's durable end rather than the high watermark, with the
// high watermark and log start for the follower to follow, or a diverging
// epoch (KIP-320) for it to truncate to. The fetch counts toward the ISR
// and the high watermark. A long poll waits for the leader's durable end to
// pass a follower's fetch offset: new appends wake it, the high watermark
// moving does not.

func (s *Server) fetchForFollower(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, replica int32, epoch int64, charge *int64) kmsg.Response {
	maxBytes := int(s.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	for i := range targets {
		t := &targets[i]
		if t.err == nil {
			t.part, t.err = s.partition(t.topic, t.req.Partition)
		}
	}
	waitCtx, cancel := withTimeout(ctx, s.cfg.Clock, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	defer cancel()
	for {
		s.respBudget.release(*charge)
		*charge = 0
		if err := s.respBudget.acquire(ctx, int64(maxBytes)); err != nil {
			resp.Topics = resp.Topics[:0]
			return resp
		}
		got, news := s.serveFollower(resp, targets, replica, epoch, maxBytes)
		s.respBudget.release(int64(maxBytes) - int64(got))
		*charge = int64(got)
		if got >= int(req.MinBytes) || got > 0 || news || req.MaxWaitMillis <= 0 || waitCtx.Err() != nil {
			return resp
		}
		if !s.waitFollowerData(waitCtx, targets) {
			s.serveFollower(resp, targets, replica, epoch, maxBytes)
			return resp
		}
	}
}

// serveFollower (re)builds resp from each partition's leader, within
// maxBytes in all (the first partition with data gets at least one
// batch), and returns the record bytes gathered and whether some partition
// has news without records (an error, a diverging epoch) that the follower
// must get at once, not after the long poll: a follower that asked a
// moment before this broker learnt it leads would otherwise wait out the
// poll, then its backoff, then the next poll.
func (s *Server) serveFollower(resp *kmsg.FetchResponse, targets []fetchTarget, replica int32, epoch int64, maxBytes int) (int, bool) {
	resp.Topics = resp.Topics[:0]
	now := s.cfg.Clock.Now()
	total, news := 0, false
	var st *kmsg.FetchResponseTopic
	for i := range targets {
		t := &targets[i]
		st = responseTopic(resp, st, t)
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = t.req.Partition
		if t.err != nil {
			sp.ErrorCode = errorCode(nil, t.err)
			st.Partitions = append(st.Partitions, sp)
			news = true
			continue
		}
		room := maxBytes - total
		limit := max(min(int(t.req.PartitionMaxBytes), room), 1)
		rd, err := t.part.ServeFollower(replication.FollowerFetch{
			Replica: replica, BrokerEpoch: epoch, CurrentLeaderEpoch: t.req.CurrentLeaderEpoch,
			FetchOffset: t.req.FetchOffset, LastFetchedEpoch: t.req.LastFetchedEpoch, Now: now,
		}, limit)
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rd.HighWatermark, rd.HighWatermark, rd.LogStartOffset
		if err != nil {
			news = true
			sp.ErrorCode = errorCode(nil, err)
			if sp.ErrorCode == kerr.KafkaStorageError.Code {
				s.log.Error("serving a follower", "topic", t.topic, "partition", t.req.Partition, "replica", replica, "err", err)
			}
		}
		if d := rd.Diverging; d != nil {
			news = true
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = d.Epoch, d.EndOffset
		}
		if n := len(rd.Records); total == 0 || total+n <= maxBytes {
			sp.RecordBatches = rd.Records
			total += n
		}
		st.Partitions = append(st.Partitions, sp)
	}
	return total, news
}

// waitFollowerData blocks until some partition has data past its
// follower's fetch offset (true), or ctx ends or the server closes (false).
// One channel watches every partition: a follower fetch names all the
// partitions it follows here, thousands on a big broker, and parks at
// every quiet moment.
func (s *Server) waitFollowerData(ctx context.Context, targets []fetchTarget) bool {
	woke := make(chan struct{}, 1)
	var parked []*fetchTarget
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for i := range targets {
		t := &targets[i]
		if t.err != nil || t.part == nil {
			continue
		}
		// Watch first, then check: a change in between still wakes us.
		stops = append(stops, t.part.WatchFollowerData(woke))
		parked = append(parked, t)
	}
	for {
		for _, t := range parked {
			if t.part.FollowerDataReady(t.req.FetchOffset) {
				return true
			}
		}
		select {
		case <-woke:
		case <-ctx.Done():
			return false
		case <-s.quit:
			return false
		}
	}
}
