package cluster

import (
	"context"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FeatureDurableAcks is the registration feature of a broker that
// acknowledges only what it has fsynced (sync=always).
const FeatureDurableAcks = "minikafka.durable.acks"

// ListenerName is the one client listener a broker registers.
const ListenerName = "PLAINTEXT"

func (c *Controller) register(ctx context.Context, req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	reg := RegisterBroker{ID: req.BrokerID, Incarnation: uuid.UUID(req.IncarnationID)}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		if l.Name == ListenerName || reg.Host == "" {
			reg.Host, reg.Port = l.Host, int32(l.Port)
		}
	}
	for _, f := range req.Features {
		if f.Name == FeatureDurableAcks && f.MaxSupportedVersion >= 1 {
			reg.DurableAcks = true
		}
	}
	img := c.cfg.Store.Image()
	old, known := img.Broker(req.BrokerID)
	if known {
		reg.CleanShutdown = req.PreviousBrokerEpoch >= 0 && req.PreviousBrokerEpoch == old.Epoch
	}
	alive := false
	if s, ok := c.sessions[req.BrokerID]; ok && known && s.epoch == old.Epoch && s.heard {
		alive = c.cfg.Clock.Now().Sub(s.seen) <= c.cfg.SessionTimeout
	}
	recs, err := c.cfg.Settings.Register(img, req.ClusterID, reg, alive)
	if err != nil {
		c.log.Warn("broker registration refused", "broker", req.BrokerID, "err", err)
		resp.ErrorCode = code(err)
		return resp
	}
	if _, err := c.commit(ctx, recs); err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	b, _ := c.cfg.Store.Image().Broker(req.BrokerID)
	if b.Incarnation != reg.Incarnation {
		resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
		return resp
	}
	if len(recs) > 0 {
		c.log.Info("broker registered", "broker", b.ID, "epoch", b.Epoch, "host", b.Host, "port", b.Port, "rack", b.Rack)
	}
	c.sessions[b.ID] = &session{epoch: b.Epoch, seen: c.cfg.Clock.Now(), heard: true}
	resp.BrokerEpoch = b.Epoch
	return resp
}

func (c *Controller) heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	img := c.cfg.Store.Image()
	b, ok := img.Broker(req.BrokerID)
	switch {
	case !ok:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp
	case b.Epoch != req.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	s := c.sessionOf(b.ID, b.Epoch)
	s.seen, s.heard = c.cfg.Clock.Now(), true
	caughtUp := req.CurrentMetadataOffset >= b.Epoch
	var recs []Record
	switch {
	case req.WantShutdown && !b.ShuttingDown:
		recs = c.cfg.Settings.Shutdown(img, b.ID)
		c.log.Info("controlled shutdown of broker", "broker", b.ID, "moves", len(recs)-1)
	case req.WantFence && !b.Fenced:
		recs = c.cfg.Settings.Fence(img, b.ID)
	case !req.WantFence && !req.WantShutdown && b.Fenced && caughtUp:
		recs = c.cfg.Settings.Unfence(img, b.ID)
		c.log.Info("broker caught up; unfencing it", "broker", b.ID, "epoch", b.Epoch)
	}
	index, err := c.commit(ctx, recs)
	if err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	b, _ = c.cfg.Store.Image().Broker(req.BrokerID)
	if b.ShuttingDown && s.shutdownOffset == 0 {
		s.shutdownOffset = max(index, c.cfg.Store.Image().Offset())
	}
	resp.IsCaughtUp = caughtUp
	resp.IsFenced = b.Fenced
	resp.ShouldShutdown = b.ShuttingDown && req.CurrentMetadataOffset >= int64(s.shutdownOffset)
	return resp
}

// ConnectionLost fences broker id at epoch when its heartbeat connection
// to this controller closed: a process that was killed says so sooner than
// its session timeout. Fencing a live broker by mistake costs a leadership
// move, never data: it is unfenced at its next heartbeat once caught up.
func (c *Controller) ConnectionLost(ctx context.Context, id int32, epoch int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		return
	}
	img := c.cfg.Store.Image()
	b, ok := img.Broker(id)
	if !ok || b.Epoch != epoch || b.Fenced {
		return
	}
	c.log.Info("broker's heartbeat connection closed; fencing it", "broker", id, "epoch", epoch)
	if _, err := c.commit(ctx, c.cfg.Settings.Fence(img, id)); err != nil {
		c.log.Warn("fencing a broker whose connection closed", "broker", id, "err", err)
	}
}
