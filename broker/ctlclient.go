package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
)

// controllerClient sends controller API requests (registration, heartbeats,
// AlterPartition, producer id blocks, topic changes) to the active
// controller: to this node's own when it is the one, in process, and
// otherwise over the controller listener of the voter the node.Router
// picks, with Kafka's messages through franz-go. A NOT_CONTROLLER answer
// moves on to the next.
type controllerClient struct {
	s *Server

	mu      sync.Mutex
	router  *node.Router
	clients map[int32]*kgo.Client // by voter id
}

func newControllerClient(s *Server) *controllerClient {
	var ids []int32
	for _, v := range s.cfg.voters() {
		ids = append(ids, v.ID)
	}
	return &controllerClient{s: s, router: node.NewRouter(s.cfg.NodeID, ids)}
}

// retryBackoff is the pause between two attempts that found no controller.
const retryBackoff = 50 * time.Millisecond

// call sends a node.Call: to the active controller (trying until it
// answers, or the call's timeout or ctx ends), or to the voter it names,
// once.
func (c *controllerClient) call(ctx context.Context, nc node.Call) (kmsg.Response, error) {
	ctx, cancel := withTimeout(ctx, c.s.cfg.Clock, nc.Timeout)
	defer cancel()
	if nc.To != node.ToController {
		return c.send(ctx, nc.To, nc.Req)
	}
	return c.requestEach(ctx, nc.Req, cmp.Or(nc.Attempt, attemptTimeout))
}

// attemptTimeout bounds one try of a controller request at one voter.
const attemptTimeout = 5 * time.Second

// request sends req to the active controller and returns its response,
// trying until ctx ends.
func (c *controllerClient) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.requestEach(ctx, req, attemptTimeout)
}

// requestEach is request with each try bounded by attempt.
func (c *controllerClient) requestEach(ctx context.Context, req kmsg.Request, attempt time.Duration) (kmsg.Response, error) {
	for {
		resp, err := c.once(ctx, req, attempt)
		if err == nil && !node.NotController(resp) {
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

func (c *controllerClient) once(ctx context.Context, req kmsg.Request, attempt time.Duration) (kmsg.Response, error) {
	s := c.s
	if s.quorumActive() {
		if dq, ok := req.(*kmsg.DescribeQuorumRequest); ok {
			return s.describeQuorum(dq), nil
		}
		return s.ctl.Handle(ctx, req)
	}
	leader := int32(-1)
	if s.quorum != nil {
		if id, ok := s.activeController(); ok {
			leader = id
		}
	}
	c.mu.Lock()
	target, ok := c.router.Target(leader)
	c.mu.Unlock()
	if !ok {
		return nil, errNoController
	}
	actx, cancel := withTimeout(ctx, s.cfg.Clock, attempt)
	defer cancel()
	resp, err := c.send(actx, target, req)
	c.mu.Lock()
	c.router.Answered(target, resp, err)
	c.mu.Unlock()
	return resp, err
}

// known is the voter that last answered as the active controller.
func (c *controllerClient) known() (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.router.Known()
}

// pick is where a request that any voter may answer goes: the active
// controller when known, otherwise the next voter.
func (c *controllerClient) pick() int32 {
	leader, ok := c.s.activeController()
	if !ok {
		leader = -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	to, _ := c.router.Target(leader)
	return to
}

// send sends req to voter target's controller listener, once, within ctx.
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
	// A fresh request value per attempt: kgo sets its version.
	r := kmsg.RequestForKey(req.Key())
	copyRequest(r, req)
	resp, err := seeds[0].Request(ctx, r)
	if err != nil {
		s.log.Debug("controller request failed", "controller", target, "api", kmsg.NameForKey(req.Key()), "err", err)
		return nil, err
	}
	return resp, nil
}

var errNoController = errors.New("no active controller known")

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
	case *kmsg.AlterConfigsRequest:
		*d = *src.(*kmsg.AlterConfigsRequest)
	case *kmsg.IncrementalAlterConfigsRequest:
		*d = *src.(*kmsg.IncrementalAlterConfigsRequest)
	case *kmsg.ElectLeadersRequest:
		*d = *src.(*kmsg.ElectLeadersRequest)
	case *kmsg.AlterPartitionAssignmentsRequest:
		*d = *src.(*kmsg.AlterPartitionAssignmentsRequest)
	case *kmsg.ListPartitionReassignmentsRequest:
		*d = *src.(*kmsg.ListPartitionReassignmentsRequest)
	case *kmsg.DescribeQuorumRequest:
		*d = *src.(*kmsg.DescribeQuorumRequest)
	case *kmsg.FetchRequest:
		*d = *src.(*kmsg.FetchRequest)
	case *kmsg.FetchSnapshotRequest:
		*d = *src.(*kmsg.FetchSnapshotRequest)
	default:
		panic(fmt.Sprintf("broker: no controller request %T", dst))
	}
}
