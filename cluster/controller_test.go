package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/clock"
)

// localLog is a Log of one node that commits at once.
type localLog struct {
	mu     sync.Mutex
	store  *Store
	next   uint64
	active bool
	term   uint64
}

func (l *localLog) Propose(_ context.Context, payload []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return 0, ErrNotController
	}
	l.next++
	return l.next, l.store.Apply(l.next, payload)
}

func (l *localLog) Active() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active
}

func (l *localLog) Gone() []int32 { return nil }

func (l *localLog) Leader() (uint64, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 1, l.term
}

type ctlHarness struct {
	*Controller
	t     *testing.T
	log   *localLog
	clock *clock.Manual
}

func newCtl(t *testing.T) *ctlHarness {
	store := NewStore()
	l := &localLog{store: store, active: true, term: 1}
	clk := clock.NewManual(time.Unix(1000, 0))
	c := NewController(ControllerConfig{NodeID: 1, ClusterID: "c1", Log: l, Store: store, Clock: clk, Seed: 1})
	return &ctlHarness{Controller: c, t: t, log: l, clock: clk}
}

func (h *ctlHarness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	resp, err := h.Handle(context.Background(), req)
	require.NoError(h.t, err)
	return resp
}

// join registers broker id and heartbeats until it is unfenced; it returns
// the broker epoch.
func (h *ctlHarness) join(id int32, inc uuid.UUID) int64 {
	h.t.Helper()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "c1", inc
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: ListenerName, Host: "h", Port: 9000 + uint16(id)}}
	rr := h.do(reg).(*kmsg.BrokerRegistrationResponse)
	require.Zero(h.t, rr.ErrorCode, kerr.ErrorForCode(rr.ErrorCode))
	hb := h.heartbeat(id, rr.BrokerEpoch, false)
	require.True(h.t, hb.IsCaughtUp)
	require.False(h.t, hb.IsFenced)
	return rr.BrokerEpoch
}

func (h *ctlHarness) heartbeat(id int32, epoch int64, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	h.t.Helper()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = id, epoch, shutdown
	hb.CurrentMetadataOffset = int64(h.Controller.cfg.Store.Image().Offset())
	return h.do(hb).(*kmsg.BrokerHeartbeatResponse)
}

func TestControllerBrokerLifecycle(t *testing.T) {
	h := newCtl(t)
	e1 := h.join(1, uuid.New())
	inc2 := uuid.New()
	e2 := h.join(2, inc2)
	require.Greater(t, e2, e1, "broker epochs are log offsets")
	img := h.cfg.Store.Image()
	require.Equal(t, "c1", img.ClusterID())

	// A heartbeat that is behind the registration is not unfenced.
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 3, "c1", uuid.New()
	e3 := h.do(reg).(*kmsg.BrokerRegistrationResponse).BrokerEpoch
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 3, e3, e3-1
	r := h.do(hb).(*kmsg.BrokerHeartbeatResponse)
	require.False(t, r.IsCaughtUp)
	require.True(t, r.IsFenced)

	// A second live process with broker 2's id is refused; a stale epoch too.
	reg = kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 2, "c1", uuid.New()
	require.Equal(t, kerr.DuplicateBrokerRegistration.Code, h.do(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
	require.Equal(t, kerr.StaleBrokerEpoch.Code, h.heartbeat(2, e2-1, false).ErrorCode)
	reg.ClusterID = "other"
	require.Equal(t, kerr.InconsistentClusterID.Code, h.do(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)

	// Broker 2 stops heartbeating: fenced after the session timeout.
	for i := 0; i < 40; i++ {
		h.clock.Advance(100 * time.Millisecond)
		h.heartbeat(1, e1, false)
		require.NoError(t, h.Tick(context.Background()))
	}
	b2, _ := h.cfg.Store.Image().Broker(2)
	require.True(t, b2.Fenced)
	b1, _ := h.cfg.Store.Image().Broker(1)
	require.False(t, b1.Fenced)

	// Once its session expired, broker 2 may come back as a new process.
	h.join(2, uuid.New())
}

func TestControllerConnectionLostAndShutdown(t *testing.T) {
	h := newCtl(t)
	e1 := h.join(1, uuid.New())
	e2 := h.join(2, uuid.New())
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 4, 2
	ct.Topics = append(ct.Topics, rt)
	resp := h.do(ct).(*kmsg.CreateTopicsResponse)
	require.Zero(t, resp.Topics[0].ErrorCode)
	require.Equal(t, int32(4), resp.Topics[0].NumPartitions)
	leads := func(id int32) int {
		n := 0
		tp, _ := h.cfg.Store.Image().Topic("t")
		for _, p := range tp.Partitions {
			if p.Leader == id {
				n++
			}
		}
		return n
	}
	require.Equal(t, 2, leads(2))

	// Controlled shutdown of 2: its leaderships move, then it may exit,
	// and it is fenced as it is told so (Metadata stops listing it).
	r := h.heartbeat(2, e2, true)
	require.Zero(t, leads(2))
	b2, _ := h.cfg.Store.Image().Broker(2)
	require.False(t, b2.Fenced, "fenced only once its shutdown is complete")
	if !r.ShouldShutdown {
		r = h.heartbeat(2, e2, true)
	}
	require.True(t, r.ShouldShutdown)
	require.True(t, r.IsFenced)
	b2, _ = h.cfg.Store.Image().Broker(2)
	require.True(t, b2.Fenced)

	// Broker 1's connection closes: it is fenced at once.
	h.ConnectionLost(context.Background(), 1, e1)
	b1, _ := h.cfg.Store.Image().Broker(1)
	require.True(t, b1.Fenced)
	require.Zero(t, leads(1), "the partitions are offline: broker 2 is shutting down")
}

func TestControllerNotActive(t *testing.T) {
	h := newCtl(t)
	h.log.mu.Lock()
	h.log.active = false
	h.log.mu.Unlock()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 1, "c1"
	require.Equal(t, kerr.NotController.Code, h.do(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = append(ct.Topics, kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: 1, ReplicationFactor: 1})
	require.Equal(t, kerr.NotController.Code, h.do(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	_, err := h.Handle(context.Background(), kmsg.NewPtrMetadataRequest())
	require.Error(t, err, "a request the controller does not serve")
}
