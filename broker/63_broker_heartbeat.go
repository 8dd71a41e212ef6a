package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// BrokerHeartbeat: v0-2 (controller listener)
//
// Behaviour:
//   - A registered broker's liveness and wishes: a heartbeat within the
//     session timeout keeps it alive; one whose metadata offset has reached
//     its registration unfences it; WantFence fences it; WantShutdown
//     starts a controlled shutdown (its leaderships move, it leaves the ISRs
//     it can) and, once it has seen those moves, fences it and answers
//     ShouldShutdown.
//   - Another epoch than the registered one: STALE_BROKER_EPOCH (the
//     broker registers again); an unknown broker: BROKER_ID_NOT_REGISTERED.
//   - The connection that carries a broker's heartbeats is watched: when it
//     closes, the broker is fenced without waiting for its session to
//     expire (a broker in controlled shutdown hangs up when it is done, and
//     is not fenced for it).
//
// Version notes:
//   - v1, v2: no field this broker reads differently (the tagged
//     OfflineLogDirs and CordonedLogDirs are ignored: one log directory).

func init() { registerController(63, 0, 2, handleBrokerHeartbeat) }

func handleBrokerHeartbeat(r *request) reply {
	req := r.body.(*kmsg.BrokerHeartbeatRequest)
	s, c := r.s, r.c
	return later(func(ctx context.Context) kmsg.Response {
		resp, err := s.ctl.Handle(ctx, req)
		if err != nil {
			return noAnswer(req, err)
		}
		if resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode == 0 && !req.WantShutdown {
			c.heartbeats.Store(&cluster.BrokerRef{ID: req.BrokerID, Epoch: req.BrokerEpoch})
		} else if req.WantShutdown {
			// A broker in controlled shutdown hangs up when it is done.
			c.heartbeats.Store(nil)
		}
		return resp
	})
}
