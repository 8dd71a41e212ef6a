package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker's standing with the controller and its producer id blocks:
// the product's node.Lifecycle and node.ProducerIDs, whose calls go
// through call (rpc.go). A controlled shutdown ends, once the lifecycle is
// released, in cleanStop.

func (b *broker) lifecycle() {
	if !b.up {
		return
	}
	if c, ok := b.life.Next(b.s.time(), int64(b.store.Image().Offset())); ok {
		b.call(c, func(resp kmsg.Response, err error) {
			out := b.life.Answer(b.s.time(), c, resp, err)
			if out.Fatal != nil {
				b.s.violate("lifecycle", "b%d can never serve: %v", b.id, out.Fatal)
				return
			}
			if out.Standing {
				b.s.tracef("b%d standing: epoch %d fenced %v", b.id, b.life.Epoch(), b.life.Fenced())
				b.reconcile()
			}
			if b.life.ShuttingDown() && b.life.Released() {
				b.cleanStop()
				return
			}
			b.lifecycle()
			b.process()
		})
	}
	if c, ok := b.pids.Next(b.life.Epoch()); ok {
		b.call(c, func(resp kmsg.Response, err error) {
			if first, n, err := b.pids.Answer(resp, err); err == nil {
				b.s.checks.producerIDs(b, first, n)
			}
		})
	}
}

// nextPID hands out a producer id (InitProducerId), or -1 while none is
// at hand (the block asked for comes at the next tick).
func (b *broker) nextPID() int64 {
	id, ok := b.pids.Take()
	if !ok {
		b.lifecycle()
		return -1
	}
	return id
}

// beginShutdown starts a controlled shutdown.
func (b *broker) beginShutdown() {
	if b.up && b.life.Epoch() != 0 && !b.life.ShuttingDown() {
		b.s.tracef("b%d begins a controlled shutdown", b.id)
		b.life.BeginShutdown()
		b.lifecycle()
	}
}
