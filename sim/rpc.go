package sim

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
)

// rpc sends a request from node from to node to over the network: serve
// runs at the receiver (if it is up) and answers through reply, whose
// answer travels back; done runs at the sender with the answer, or with nil
// once timeout ticks pass without one. done runs once however many copies
// the network delivers.
func (s *Sim) rpc(from, to int32, kind string, timeout int64, serve func(reply func(any)), done func(any)) {
	finished := false
	finish := func(resp any) {
		if !finished {
			finished = true
			done(resp)
		}
	}
	s.net.send(from, to, kind, func() {
		if !s.up(to) {
			return
		}
		serve(func(resp any) {
			s.net.send(to, from, kind+"-resp", func() { finish(resp) })
		})
	})
	s.at(timeout, kind+"-timeout", func() { finish(nil) })
}

// up reports whether node id is running (clients always are).
func (s *Sim) up(id int32) bool {
	if id >= clientBase {
		return true
	}
	return s.brokers[id-1].up
}

// callController sends a controller API request from node from to broker
// to, whose controller listener serves it; done gets the response or nil.
func (s *Sim) callController(from, to int32, req kmsg.Request, done func(kmsg.Response)) {
	timeout := int64(ctlAttemptMs)
	if f, ok := req.(*kmsg.FetchRequest); ok {
		timeout += int64(f.MaxWaitMillis) // a long poll
	}
	s.rpc(from, to, "ctl-"+kmsg.NameForKey(req.Key()), timeout, func(reply func(any)) {
		s.brokers[to-1].serveController(req, func(resp kmsg.Response) { reply(resp) })
	}, func(resp any) {
		r, _ := resp.(kmsg.Response)
		done(r)
	})
}

var errNoAnswer = errors.New("sim: no answer")

// call makes a node.Call of the shell, as the broker's controller client
// does: to the voter it names, once; or to the active controller, the
// Router picking a voter per attempt, again after a pause while the answer
// is NOT_CONTROLLER or none came, until the call's timeout. done runs at
// this incarnation only.
func (b *broker) call(c node.Call, done func(kmsg.Response, error)) {
	gen := b.gen
	deadline := b.s.now + c.Timeout.Milliseconds()
	var attempt func()
	attempt = func() {
		to := c.To
		if to == node.ToController && b.active() {
			to = b.id // the active controller is this node: in process
		} else if to == node.ToController {
			var ok bool
			if to, ok = b.router.Target(b.leader()); !ok {
				b.retry(deadline, attempt, done)
				return
			}
		}
		b.s.callController(b.id, to, c.Req, func(resp kmsg.Response) {
			if !b.up || b.gen != gen {
				return
			}
			var err error
			if resp == nil {
				err = errNoAnswer
			}
			if c.To != node.ToController {
				done(resp, err)
				return
			}
			b.router.Answered(to, resp, err)
			if err == nil && !node.NotController(resp) {
				done(resp, nil)
				return
			}
			b.retry(deadline, attempt, done)
		})
	}
	attempt()
}

// retry tries again after the controller client's pause, or gives up at
// deadline.
func (b *broker) retry(deadline int64, attempt func(), done func(kmsg.Response, error)) {
	const pauseMs = int64(50 * time.Millisecond / time.Millisecond)
	if b.s.now+pauseMs > deadline {
		done(nil, errNoAnswer)
		return
	}
	b.later(pauseMs, "ctl-retry", attempt)
}
