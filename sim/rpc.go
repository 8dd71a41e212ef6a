package sim

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
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
// to, whose ControllerCore serves it; done gets the response or nil.
func (s *Sim) callController(from, to int32, req kmsg.Request, done func(kmsg.Response)) {
	s.rpc(from, to, "ctl-"+kmsg.NameForKey(req.Key()), ctlTimeoutMs, func(reply func(any)) {
		c := s.brokers[to-1]
		c.submit(ctlJob{
			start: func(q cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op {
				op, err := c.core.Handle(q, img, now, req)
				if err != nil {
					return nil
				}
				return op
			},
			done: func(op *cluster.Op) {
				if op != nil {
					reply(op.Response())
				}
			},
		})
	}, func(resp any) {
		r, _ := resp.(kmsg.Response)
		done(r)
	})
}
