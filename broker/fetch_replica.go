package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/broker/node"
)

// A follower's fetch (Fetch with a replica id), served by
// node.ServeFollower within the response budget, with its long poll here.

func (s *Server) fetchForFollower(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, replica int32, epoch int64, charge *int64, lease *bufpool.Lease) kmsg.Response {
	maxBytes := int(s.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	img := s.store.Image()
	for i := range targets {
		t := &targets[i]
		if t.Err == nil {
			t.Part, t.Err = s.partition(t.Topic, t.Req.Partition)
		}
		if t.Err == nil {
			t.Throttle = s.throttles.leaderQuota(img, t.Topic, t.Req.Partition, s.cfg.NodeID, replica)
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
		got, news := s.serveFollower(resp, targets, replica, epoch, maxBytes, lease)
		s.respBudget.release(int64(maxBytes) - int64(got))
		*charge = int64(got)
		if node.AnswerFollowerNow(req, got, news) || waitCtx.Err() != nil {
			return resp
		}
		if !s.waitFollowerData(waitCtx, targets) {
			s.serveFollower(resp, targets, replica, epoch, maxBytes, lease)
			return resp
		}
	}
}

// serveFollower rebuilds resp, its records in memory lease holds: what an
// earlier call put there is released first, as resp forgets it.
func (s *Server) serveFollower(resp *kmsg.FetchResponse, targets []fetchTarget, replica int32, epoch int64, maxBytes int, lease *bufpool.Lease) (int, bool) {
	resp.Topics = resp.Topics[:0]
	lease.Release()
	got, news, failed := node.ServeFollower(resp, targets, replica, epoch, maxBytes, s.cfg.Clock.Now(), lease)
	for _, f := range failed {
		s.log.Error("serving a follower", "topic", f.Target.Topic, "partition", f.Target.Req.Partition, "replica", replica, "err", f.Err)
	}
	return got, news
}

// waitFollowerData blocks until some partition has data past its
// follower's fetch offset (true), or ctx ends or the server closes (false).
// One channel watches every partition: a follower fetch names all the
// partitions it follows here, thousands on a big broker, and parks at
// every quiet moment.
func (s *Server) waitFollowerData(ctx context.Context, targets []fetchTarget) bool {
	woke := make(chan struct{}, 1)
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for i := range targets {
		t := &targets[i]
		if t.Err != nil || t.Part == nil {
			continue
		}
		// Watch first, then check: a change in between still wakes us.
		stops = append(stops, t.Part.WatchFollowerData(woke))
	}
	for {
		if node.FollowerDataReady(targets) {
			return true
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
