package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// The controller listener's APIs, served by this node's controller when it
// is the active one (NOT_CONTROLLER otherwise; the caller tries another):
//
//   - BrokerRegistration (62) v0-4, BrokerHeartbeat (63) v0-2: a broker's
//     lifecycle (lifecycle.go, cluster/controller_brokers.go). The
//     connection that carries a broker's heartbeats is watched: when it
//     closes, the broker is fenced without waiting for its session to
//     expire.
//   - AlterPartition (56) v0-3: a leader's ISR changes.
//   - AllocateProducerIDs (67) v0: blocks of producer ids.
//   - CreateTopics (19) v0-7, DeleteTopics (20) v0-6, CreatePartitions
//     (37) v0-3, AlterConfigs (33) v0-2, IncrementalAlterConfigs (44)
//     v0-1, ElectLeaders (43) v0-2, AlterPartitionReassignments (45)
//     v0-1, ListPartitionReassignments (46) v0: what brokers forward of
//     their clients' requests.
//
// Each waits for the controller's commit in the waiting phase.

func init() {
	registerController(62, 0, 4, handleControllerAPI)
	registerController(63, 0, 2, handleBrokerHeartbeat)
	registerController(56, 0, 3, handleControllerAPI)
	registerController(67, 0, 0, handleControllerAPI)
	registerController(19, 0, 7, handleControllerAPI)
	registerController(20, 0, 6, handleControllerAPI)
	registerController(37, 0, 3, handleControllerAPI)
	registerController(33, 0, 2, handleControllerAPI)
	registerController(44, 0, 1, handleControllerAPI)
	registerController(43, 0, 2, handleControllerAPI)
	registerController(45, 0, 1, handleControllerAPI)
	registerController(46, 0, 0, handleControllerAPI)
}

func handleControllerAPI(r *request) reply {
	s := r.s
	return later(func(ctx context.Context) kmsg.Response {
		resp, err := s.ctl.Handle(ctx, r.body)
		if err != nil {
			return noAnswer(r.body, err)
		}
		return resp
	})
}

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

// noAnswer is the response of a request the controller did not answer
// before the connection or the server went away: it is never written.
// A request it does not serve, registered here, is a bug.
func noAnswer(req kmsg.Request, err error) kmsg.Response {
	if errors.Is(err, cluster.ErrUnsupportedRequest) {
		panic(err)
	}
	return req.ResponseKind()
}
