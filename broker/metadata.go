package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
)

// Brokers that are not voters follow the metadata log as KRaft's observers
// do (node.MetadataFollower), with Kafka's Fetch on __cluster_metadata
// sent to a voter's controller listener, which serves it here
// (node.ServeMetadata, and node.Snapshot for FetchSnapshot).

func init() {
	registerController(1, 12, 15, handleMetadataFetch)
	registerController(59, 0, 1, handleFetchSnapshot)
}

// handleMetadataFetch serves a follower's fetch of the metadata log,
// waiting up to MaxWaitMillis for something past its offset.
func handleMetadataFetch(r *request) reply {
	req := r.body.(*kmsg.FetchRequest)
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		ctx, cancel := withTimeout(ctx, s.cfg.Clock, time.Duration(req.MaxWaitMillis)*time.Millisecond)
		defer cancel()
		for {
			changed := s.store.Changed()
			resp, ready := node.ServeMetadata(s.store, req, s.cfg.Clock.Now())
			if ready {
				return resp
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return resp
			case <-s.quit:
				return resp
			}
		}
	})
}

// handleFetchSnapshot sends the current image, whole, as the snapshot a
// follower that is too far behind restores.
func handleFetchSnapshot(r *request) reply {
	return done(node.Snapshot(r.s.store, r.body.(*kmsg.FetchSnapshotRequest)))
}

// followMetadata is a broker that is not a voter keeping its Store up with
// the voters' metadata log until ctx ends.
func (s *Server) followMetadata(ctx context.Context) {
	m := node.NewMetadataFollower(s.cfg.NodeID, s.store, s.log)
	for ctx.Err() == nil {
		now := s.cfg.Clock.Now()
		c, ok := m.Next(now, s.ctlClient.pick())
		if !ok {
			t := s.cfg.Clock.NewTimer(max(m.NextWake().Sub(now), time.Millisecond))
			select {
			case <-t.C():
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		resp, err := s.ctlClient.call(ctx, c)
		m.Answer(s.cfg.Clock.Now(), c, resp, err)
	}
}
