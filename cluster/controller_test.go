package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/clock"
)

// ctlHarness drives a ControllerCore as a controller node of a one-voter
// quorum would: an operation's batches are committed to the Store at once,
// or lost while the node is not active.
type ctlHarness struct {
	t      *testing.T
	core   *ControllerCore
	store  *Store
	next   uint64
	active bool
	clock  *clock.Manual
}

func newCtl(t *testing.T) *ctlHarness {
	core := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1})
	return &ctlHarness{t: t, core: core, store: NewStore(), active: true, clock: clock.NewManual(time.Unix(1000, 0))}
}

// run runs one operation to its end.
func (h *ctlHarness) run(start func(Quorum, *Metadata, time.Time) *Op) *Op {
	op := start(Quorum{Active: h.active, Term: 1}, h.store.Image(), h.clock.Now())
	for op != nil && !op.Done() {
		out := Outcome{Now: h.clock.Now()}
		payload, err := EncodeBatch(op.Proposal())
		require.NoError(h.t, err)
		if !h.active {
			out.Lost = ErrNotController
		} else {
			h.next++
			require.NoError(h.t, h.store.Apply(h.next, payload))
			out.Offset, out.Refused = h.next, h.store.Refusal(h.next)
		}
		out.Image = h.store.Image()
		op.Applied(out)
	}
	return op
}

func (h *ctlHarness) Handle(req kmsg.Request) (kmsg.Response, error) {
	var herr error
	op := h.run(func(q Quorum, img *Metadata, now time.Time) *Op {
		op, err := h.core.Handle(q, img, now, req)
		herr = err
		return op
	})
	if herr != nil {
		return nil, herr
	}
	return op.Response(), nil
}

func (h *ctlHarness) Tick() error {
	return h.run(func(q Quorum, img *Metadata, now time.Time) *Op { return h.core.Tick(q, img, now) }).Err()
}

func (h *ctlHarness) ConnectionLost(id int32, epoch int64) {
	h.run(func(q Quorum, img *Metadata, now time.Time) *Op { return h.core.ConnectionLost(q, img, now, id, epoch) })
}

func (h *ctlHarness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	resp, err := h.Handle(req)
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
	hb.CurrentMetadataOffset = int64(h.store.Image().Offset())
	return h.do(hb).(*kmsg.BrokerHeartbeatResponse)
}

func TestControllerBrokerLifecycle(t *testing.T) {
	h := newCtl(t)
	e1 := h.join(1, uuid.New())
	inc2 := uuid.New()
	e2 := h.join(2, inc2)
	require.Greater(t, e2, e1, "broker epochs are log offsets")
	img := h.store.Image()
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
		require.NoError(t, h.Tick())
	}
	b2, _ := h.store.Image().Broker(2)
	require.True(t, b2.Fenced)
	b1, _ := h.store.Image().Broker(1)
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
		tp, _ := h.store.Image().Topic("t")
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
	b2, _ := h.store.Image().Broker(2)
	require.False(t, b2.Fenced, "fenced only once its shutdown is complete")
	if !r.ShouldShutdown {
		r = h.heartbeat(2, e2, true)
	}
	require.True(t, r.ShouldShutdown)
	require.True(t, r.IsFenced)
	b2, _ = h.store.Image().Broker(2)
	require.True(t, b2.Fenced)

	// Broker 1's connection closes: it is fenced at once.
	h.ConnectionLost(1, e1)
	b1, _ := h.store.Image().Broker(1)
	require.True(t, b1.Fenced)
	require.Zero(t, leads(1), "the partitions are offline: broker 2 is shutting down")
}

func TestControllerNotActive(t *testing.T) {
	h := newCtl(t)
	h.active = false
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 1, "c1"
	require.Equal(t, kerr.NotController.Code, h.do(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = append(ct.Topics, kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: 1, ReplicationFactor: 1})
	require.Equal(t, kerr.NotController.Code, h.do(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	_, err := h.Handle(kmsg.NewPtrMetadataRequest())
	require.Error(t, err, "a request the controller does not serve")
}
