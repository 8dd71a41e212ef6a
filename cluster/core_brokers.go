package cluster

import (
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FeatureDurableAcks is the registration feature of a broker that
// acknowledges only what it has fsynced (sync=always) and whose disk holds
// what it had when it stopped.
const FeatureDurableAcks = "minikafka.durable.acks"

// ListenerName is the one client listener a broker registers.
const ListenerName = "PLAINTEXT"

func (c *ControllerCore) register(o *Op, q Quorum, req *kmsg.BrokerRegistrationRequest) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	fail := func(err error) { resp.ErrorCode = code(err); o.finish(resp, nil) }
	c.ready(o, q, func(err error) {
		if err != nil {
			fail(err)
			return
		}
		reg := registration(req)
		img := o.img
		old, known := img.Broker(req.BrokerID)
		if known {
			reg.CleanShutdown = req.PreviousBrokerEpoch >= 0 && req.PreviousBrokerEpoch == old.Epoch
		}
		alive := false
		if s, ok := c.sessions[req.BrokerID]; ok && known && s.epoch == old.Epoch && s.heard {
			alive = o.now.Sub(s.seen) <= c.cfg.SessionTimeout
		}
		recs, err := c.cfg.Settings.Register(img, req.ClusterID, reg, alive)
		if err != nil {
			c.log.Warn("broker registration refused", "broker", req.BrokerID, "err", err)
			fail(err)
			return
		}
		o.commit(recs, func(_ uint64, err error) {
			if err != nil {
				fail(err)
				return
			}
			b, _ := o.img.Broker(req.BrokerID)
			if b == nil || b.Incarnation != reg.Incarnation {
				fail(kerr.DuplicateBrokerRegistration)
				return
			}
			if len(recs) > 0 {
				c.log.Info("broker registered", "broker", b.ID, "epoch", b.Epoch, "host", b.Host, "port", b.Port, "rack", b.Rack)
			}
			c.sessions[b.ID] = &session{epoch: b.Epoch, seen: o.now, heard: true}
			resp.BrokerEpoch = b.Epoch
			o.finish(resp, nil)
		})
	})
}

// registration reads a BrokerRegistration request.
func registration(req *kmsg.BrokerRegistrationRequest) RegisterBroker {
	reg := RegisterBroker{ID: req.BrokerID, Incarnation: uuid.UUID(req.IncarnationID)}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		if l.Name == ListenerName || reg.Host == "" {
			reg.Host, reg.Port = l.Host, int32(l.Port)
		}
	}
	if len(req.LogDirs) > 0 {
		reg.LogDir = uuid.UUID(req.LogDirs[0])
	}
	for _, f := range req.Features {
		if f.Name == FeatureDurableAcks && f.MaxSupportedVersion >= 1 {
			reg.DurableAcks = true
		}
	}
	return reg
}

func (c *ControllerCore) heartbeat(o *Op, q Quorum, req *kmsg.BrokerHeartbeatRequest) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	fail := func(err error) { resp.ErrorCode = code(err); o.finish(resp, nil) }
	c.ready(o, q, func(err error) {
		if err != nil {
			fail(err)
			return
		}
		img := o.img
		b, ok := img.Broker(req.BrokerID)
		switch {
		case !ok:
			fail(kerr.BrokerIDNotRegistered)
			return
		case b.Epoch != req.BrokerEpoch:
			fail(kerr.StaleBrokerEpoch)
			return
		}
		s := c.sessionOf(b.ID, b.Epoch, o.now)
		s.seen, s.heard = o.now, true
		caughtUp := req.CurrentMetadataOffset >= b.Epoch
		var recs []Record
		switch {
		case req.WantShutdown && !b.ShuttingDown:
			recs = c.cfg.Settings.Shutdown(img, b.ID)
			c.log.Info("controlled shutdown of broker", "broker", b.ID, "moves", len(recs)-1)
		case req.WantShutdown && !b.Fenced && s.shutdownOffset > 0 && req.CurrentMetadataOffset >= int64(s.shutdownOffset):
			// Its leaderships have moved and it has seen them move: it may
			// go, and it is fenced now (Kafka's SHUTDOWN_NOW), so that
			// Metadata stops naming a broker that is exiting and what it
			// still leads alone goes offline at once, not a session later.
			recs = c.cfg.Settings.Fence(img, b.ID)
			c.log.Info("controlled shutdown of broker complete; fencing it", "broker", b.ID, "epoch", b.Epoch)
		case req.WantFence && !b.Fenced:
			recs = c.cfg.Settings.Fence(img, b.ID)
		case !req.WantFence && !req.WantShutdown && b.Fenced && caughtUp:
			recs = c.cfg.Settings.Unfence(img, b.ID)
			c.log.Info("broker caught up; unfencing it", "broker", b.ID, "epoch", b.Epoch)
		}
		o.commit(recs, func(index uint64, err error) {
			if err != nil {
				fail(err)
				return
			}
			b, _ := o.img.Broker(req.BrokerID)
			if b == nil || b.Epoch != req.BrokerEpoch {
				fail(kerr.StaleBrokerEpoch)
				return
			}
			if b.ShuttingDown && s.shutdownOffset == 0 {
				s.shutdownOffset = max(index, o.img.Offset())
			}
			resp.IsCaughtUp = caughtUp
			resp.IsFenced = b.Fenced
			resp.ShouldShutdown = b.ShuttingDown && req.CurrentMetadataOffset >= int64(s.shutdownOffset)
			o.finish(resp, nil)
		})
	})
}
