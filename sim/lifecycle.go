package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// The broker's standing with the controller, as the product's lifecycle:
// register with a fresh incarnation, heartbeat with the metadata offset
// applied (the controller unfences a broker once it has caught up), ask
// for a block of producer ids, and on a controlled shutdown heartbeat with
// WantShutdown until the controller says it may exit.

func (b *broker) lifecycle() {
	if b.lifeBusy {
		return
	}
	switch {
	case b.epoch < 0:
		b.register()
	case b.s.now-b.lastHB >= heartbeatMs:
		b.heartbeat()
	case b.pidNext >= b.pidEnd && !b.pidBusy && !b.fenced:
		b.allocatePIDs()
	}
}

func (b *broker) call(req kmsg.Request, done func(kmsg.Response)) {
	gen := b.gen
	b.lifeBusy = true
	b.s.callController(b.id, b.controller(), req, func(resp kmsg.Response) {
		if b.up && b.gen == gen {
			b.lifeBusy = false
			done(resp)
			b.process()
		}
	})
}

func (b *broker) register() {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = b.id, clusterID, b.incarnation
	req.PreviousBrokerEpoch = b.prevEpoch
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: cluster.ListenerName, Host: "sim", Port: 9000 + uint16(b.id)}}
	req.Features = []kmsg.BrokerRegistrationRequestFeature{{Name: cluster.FeatureDurableAcks, MinSupportedVersion: 1, MaxSupportedVersion: 1}}
	b.call(req, func(r kmsg.Response) {
		resp, _ := r.(*kmsg.BrokerRegistrationResponse)
		if resp == nil || resp.ErrorCode != 0 {
			return
		}
		b.epoch = resp.BrokerEpoch
		b.lastHB = -heartbeatMs
		b.s.tracef("b%d registered epoch %d", b.id, b.epoch)
		b.reconcile()
	})
}

func (b *broker) heartbeat() {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	req.CurrentMetadataOffset = int64(b.store.Image().Offset())
	req.WantShutdown = b.wantShutdown
	b.lastHB = b.s.now
	epoch := b.epoch
	b.call(req, func(r kmsg.Response) {
		resp, _ := r.(*kmsg.BrokerHeartbeatResponse)
		if resp == nil || epoch != b.epoch {
			return
		}
		switch resp.ErrorCode {
		case 0:
		case kerr.StaleBrokerEpoch.Code, kerr.BrokerIDNotRegistered.Code:
			// The controller does not know this incarnation: register again.
			b.epoch = -1
			return
		default:
			return
		}
		if b.fenced != resp.IsFenced {
			b.fenced = resp.IsFenced
			b.reconcile()
		}
		if resp.ShouldShutdown && b.wantShutdown {
			b.cleanStop()
		}
	})
}

func (b *broker) allocatePIDs() {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	b.pidBusy = true
	b.call(req, func(r kmsg.Response) {
		b.pidBusy = false
		resp, _ := r.(*kmsg.AllocateProducerIDsResponse)
		if resp == nil || resp.ErrorCode != 0 {
			return
		}
		b.s.checks.producerIDs(b, resp.ProducerIDStart, int64(resp.ProducerIDLen))
		b.pidNext, b.pidEnd = resp.ProducerIDStart, resp.ProducerIDStart+int64(resp.ProducerIDLen)
	})
}

// nextPID hands out a producer id from the block (InitProducerId), or -1.
func (b *broker) nextPID() int64 {
	if b.pidNext >= b.pidEnd {
		return -1
	}
	id := b.pidNext
	b.pidNext++
	return id
}

// beginShutdown starts a controlled shutdown.
func (b *broker) beginShutdown() {
	if b.up && b.epoch >= 0 && !b.wantShutdown {
		b.s.tracef("b%d begins a controlled shutdown", b.id)
		b.wantShutdown = true
		b.lastHB = -heartbeatMs
	}
}
