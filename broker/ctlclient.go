package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerClient sends controller API requests (registration, heartbeats,
// AlterPartition, producer id blocks, topic changes) to the active
// controller: to this node's own when it is the one, in process, and
// otherwise over the controller listener of the voter the quorum names as
// leader (or each voter in turn while no leader is known), with Kafka's
// messages through franz-go. A NOT_CONTROLLER answer moves on to the next.
type controllerClient struct {
	s *Server

	mu      sync.Mutex
	clients map[int32]*kgo.Client // by voter id
	next    int                   // round robin when no leader is known
	// lastGood is 1 + the voter that last answered as the active
	// controller (0: none yet): where a broker that is not a voter tries
	// first.
	lastGood atomic.Int32
}

// retryBackoff is the pause between two attempts that found no controller.
const retryBackoff = 50 * time.Millisecond

// request sends req to the active controller and returns its response,
// trying until ctx ends.
func (c *controllerClient) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	for {
		resp, err := c.once(ctx, req)
		if err == nil && !notController(resp) {
			return resp, nil
		}
		if ctx.Err() != nil {
			if err == nil {
				err = kerr.NotController
			}
			return nil, fmt.Errorf("controller request %s: %w (%w)", kmsg.NameForKey(req.Key()), ctx.Err(), err)
		}
		c.s.pause(retryBackoff)
	}
}

func (c *controllerClient) once(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	s := c.s
	if s.quorumActive() {
		if dq, ok := req.(*kmsg.DescribeQuorumRequest); ok {
			return s.describeQuorum(dq), nil
		}
		return s.ctl.Handle(ctx, req)
	}
	target, known := s.activeController()
	if !known || target == s.cfg.NodeID {
		target = c.roundRobin()
		if target == s.cfg.NodeID {
			return nil, errNoController
		}
	}
	resp, err := c.send(ctx, target, req)
	if err != nil {
		c.lastGood.CompareAndSwap(target+1, 0)
		return nil, err
	}
	if notController(resp) {
		c.lastGood.CompareAndSwap(target+1, 0)
	} else {
		c.lastGood.Store(target + 1)
	}
	return resp, nil
}

// send sends req to voter target's controller listener, once.
func (c *controllerClient) send(ctx context.Context, target int32, req kmsg.Request) (kmsg.Response, error) {
	s := c.s
	cl, err := c.client(target)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errNoController
	}
	attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// A fresh request value per attempt: kgo sets its version.
	r := kmsg.RequestForKey(req.Key())
	copyRequest(r, req)
	resp, err := seeds[0].Request(attempt, r)
	if err != nil {
		s.log.Debug("controller request failed", "controller", target, "api", kmsg.NameForKey(req.Key()), "err", err)
		return nil, err
	}
	return resp, nil
}

var errNoController = errors.New("no active controller known")

func (c *controllerClient) roundRobin() int32 {
	voters := c.s.cfg.voters()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return voters[c.next%len(voters)].ID
}

// client is the franz-go client of voter id's controller listener.
func (c *controllerClient) client(id int32) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[id]; ok {
		return cl, nil
	}
	var addr string
	for _, v := range c.s.cfg.voters() {
		if v.ID == id {
			addr = v.Addr
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("controller %d has no address", id)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("minikafka-broker-%d", c.s.cfg.NodeID)),
		kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[int32]*kgo.Client{}
	}
	c.clients[id] = cl
	return cl, nil
}

func (c *controllerClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
}

// copyRequest copies src's fields into dst of the same type (kmsg requests
// are plain structs).
func copyRequest(dst, src kmsg.Request) {
	switch d := dst.(type) {
	case *kmsg.BrokerRegistrationRequest:
		*d = *src.(*kmsg.BrokerRegistrationRequest)
	case *kmsg.BrokerHeartbeatRequest:
		*d = *src.(*kmsg.BrokerHeartbeatRequest)
	case *kmsg.AlterPartitionRequest:
		*d = *src.(*kmsg.AlterPartitionRequest)
	case *kmsg.AllocateProducerIDsRequest:
		*d = *src.(*kmsg.AllocateProducerIDsRequest)
	case *kmsg.CreateTopicsRequest:
		*d = *src.(*kmsg.CreateTopicsRequest)
	case *kmsg.DeleteTopicsRequest:
		*d = *src.(*kmsg.DeleteTopicsRequest)
	case *kmsg.CreatePartitionsRequest:
		*d = *src.(*kmsg.CreatePartitionsRequest)
	case *kmsg.DescribeQuorumRequest:
		*d = *src.(*kmsg.DescribeQuorumRequest)
	default:
		panic(fmt.Sprintf("broker: no controller request %T", dst))
	}
}

// notController reports whether resp says the node that answered is not
// the active controller.
func notController(resp kmsg.Response) bool {
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
	}
	return false
}
