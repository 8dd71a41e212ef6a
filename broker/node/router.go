package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Call is a controller API request a piece of the shell wants sent. To is
// ToController (the active controller, found through the Router) or a
// voter's node id (a request only that voter must answer); Timeout bounds
// the wait for the answer. Attempt, when set, bounds each try at one
// voter: a controller that died or was cut off answers nothing, and a
// call that must reach the next one soon (a heartbeat, inside the new
// controller's grace) moves on after it.
type Call struct {
	Req     kmsg.Request
	To      int32
	Timeout time.Duration
	Attempt time.Duration
}

// ToController sends a Call to the active controller.
const ToController int32 = -1

// Router picks the voter a controller request goes to: the active
// controller when it is known (the quorum's leader, for a voter; the voter
// that last answered as the active controller, for a broker that is not
// one), otherwise the voters in turn. NOT_CONTROLLER moves it on to the
// next. One driver goroutine at a time.
type Router struct {
	self   int32
	voters []int32
	next   int
	// lastGood is the voter that last answered as the active controller
	// (-1: none yet): where a broker that is not a voter tries first.
	lastGood int32
}

// NewRouter is the router of node self among voters.
func NewRouter(self int32, voters []int32) *Router {
	return &Router{self: self, voters: voters, lastGood: -1}
}

// Target is where to send a controller request, given the quorum leader
// this node knows (-1: none, or not a voter). ok is false when the only
// choice is this node, which is not the active controller: wait, and try
// again.
func (r *Router) Target(leader int32) (to int32, ok bool) {
	if leader < 0 {
		leader = r.lastGood
	}
	if leader >= 0 && leader != r.self {
		return leader, true
	}
	r.next++
	to = r.voters[r.next%len(r.voters)]
	return to, to != r.self
}

// Answered records how voter to answered: with resp (which may say it is
// not the active controller), or not at all (err).
func (r *Router) Answered(to int32, resp kmsg.Response, err error) {
	switch {
	case err != nil || NotController(resp):
		if r.lastGood == to {
			r.lastGood = -1
		}
	default:
		r.lastGood = to
	}
}

// Known is the voter that last answered as the active controller.
func (r *Router) Known() (int32, bool) { return r.lastGood, r.lastGood >= 0 }

// Voters are the quorum's voters.
func (r *Router) Voters() []int32 { return r.voters }

// NotController reports whether resp says the node that answered is not
// the active controller.
func NotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == nc
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, rr := range r.Resources {
			if rr.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, rr := range r.Resources {
			if rr.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionAssignmentsResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	}
	return false
}
