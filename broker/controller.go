package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/cluster"
)

// controller drives this node's node.OpQueue: one goroutine takes the
// operations the controller APIs, lost heartbeat connections and its clock
// submit, proposes the batches they ask for to the quorum (waiting for
// each to be applied or lost) and answers their callers. A node that is
// not a voter never leads the quorum: its operations answer
// NOT_CONTROLLER without proposing anything.
type controller struct {
	s    *Server
	q    *node.OpQueue
	log  metadataLog
	jobs chan node.Job
	done chan struct{} // closed when run returns: nothing will answer a job
}

// metadataLog is the quorum as the controller sees it.
type metadataLog interface {
	// Propose commits payload and returns its index once the entry is
	// applied to the Store.
	Propose(ctx context.Context, payload []byte) (uint64, error)
	Active() bool
	// Leader is the quorum leader's node id (-1: unknown) and its term.
	Leader() (int32, uint64)
	// Gone lists the voters whose connections to this node closed and that
	// have neither connected again nor sent anything since.
	Gone() []int32
}

func newController(s *Server, core *cluster.ControllerCore, log metadataLog) *controller {
	return &controller{
		s: s, log: log, jobs: make(chan node.Job, 64), done: make(chan struct{}),
		q: node.NewOpQueue(core, node.OpQueueConfig{Logger: s.log}),
	}
}

// Settings are the settings the controller decides with.
func (c *controller) Settings() cluster.Settings { return c.q.Settings() }

// run serves the queue until ctx ends.
func (c *controller) run(ctx context.Context) {
	defer close(c.done)
	t := c.s.cfg.Clock.NewTimer(node.DefaultTickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-c.jobs:
			c.q.Submit(j)
		case <-t.C():
			t.Reset(node.DefaultTickInterval)
			c.q.Tick(c.s.cfg.Clock.Now(), c.log.Active())
		}
		c.pump(ctx)
	}
}

// pump runs the queued operations until none has a batch to propose.
func (c *controller) pump(ctx context.Context) {
	for {
		payload, ok := c.q.Next(c.quorum(), c.s.store.Image(), c.s.cfg.Clock.Now())
		if !ok {
			return
		}
		// No timeout: a batch is applied, or this node's leadership or term
		// changes (see node.OpQueue.Proposing for why it is never given up).
		out := cluster.Outcome{}
		if idx, err := c.log.Propose(ctx, payload); err != nil {
			out.Lost = err
		} else {
			out.Offset, out.Refused = idx, c.s.store.Refusal(idx)
		}
		out.Image, out.Now = c.s.store.Image(), c.s.cfg.Clock.Now()
		c.q.Outcome(out)
	}
}

func (c *controller) quorum() cluster.Quorum {
	q := cluster.Quorum{Active: c.log.Active(), Gone: c.log.Gone()}
	_, q.Term = c.log.Leader()
	return q
}

// submit hands j to the loop; false once it has stopped.
func (c *controller) submit(ctx context.Context, j node.Job) bool {
	select {
	case c.jobs <- j:
		return true
	case <-c.done:
	case <-ctx.Done():
	}
	return false
}

// errControllerStopped: the controller stopped before it answered.
var errControllerStopped = errors.New("broker: the controller stopped")

// Handle serves one controller API request and waits for its answer. It
// returns cluster.ErrUnsupportedRequest for a request the controller does
// not serve, and ctx's error when ctx ends first (the operation may still
// commit).
func (c *controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	type answer struct {
		resp kmsg.Response
		err  error
	}
	ch := make(chan answer, 1)
	j := c.q.HandleJob(req, func(resp kmsg.Response, err error) { ch <- answer{resp, err} })
	if !c.submit(ctx, j) {
		return nil, fmt.Errorf("%s: %w", kmsg.NameForKey(req.Key()), errControllerStopped)
	}
	select {
	case a := <-ch:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, errControllerStopped
	}
}

// ConnectionLost fences broker id at epoch, whose heartbeat connection to
// this controller closed.
func (c *controller) ConnectionLost(ctx context.Context, id int32, epoch int64) {
	c.submit(ctx, c.q.ConnectionLostJob(id, epoch))
}
