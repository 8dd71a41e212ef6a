package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// The controller listener's APIs, served by this node's controller when it
// is the active one (NOT_CONTROLLER otherwise; the caller tries another).
// A broker's own controller APIs each have their file:
// BrokerRegistration (62_broker_registration.go), BrokerHeartbeat
// (63_broker_heartbeat.go), AlterPartition (56_alter_partition.go) and
// AllocateProducerIDs (67_allocate_producer_ids.go). Registered here are
// what brokers forward of their clients' requests: CreateTopics (19) v0-7,
// DeleteTopics (20) v0-6, CreatePartitions (37) v0-3, AlterConfigs (33)
// v0-2, IncrementalAlterConfigs (44) v0-1, ElectLeaders (43) v0-2,
// AlterPartitionReassignments (45) v0-1, ListPartitionReassignments (46)
// v0; each file of those APIs says what the controller does with them.
//
// Each waits for the controller's commit in the waiting phase.

func init() {
	registerController(19, 0, 7, handleControllerAPI)
	registerController(20, 0, 6, handleControllerAPI)
	registerController(37, 0, 3, handleControllerAPI)
	registerController(33, 0, 2, handleControllerAPI)
	registerController(44, 0, 1, handleControllerAPI)
	registerController(43, 0, 2, handleControllerAPI)
	registerController(45, 0, 1, handleControllerAPI)
	registerController(46, 0, 0, handleControllerAPI)
}

// handleControllerAPI serves a controller API whose answer is the
// controller core's alone (cluster.ControllerCore.Handle).
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

// noAnswer is the response of a request the controller did not answer
// before the connection or the server went away: it is never written.
// A request it does not serve, registered here, is a bug.
func noAnswer(req kmsg.Request, err error) kmsg.Response {
	if errors.Is(err, cluster.ErrUnsupportedRequest) {
		panic(err)
	}
	return req.ResponseKind()
}
