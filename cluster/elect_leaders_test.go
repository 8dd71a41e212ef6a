package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// electHarness is a store and a clock that operations of any core run on.
type electHarness struct {
	t     *testing.T
	store *Store
	next  uint64
	now   time.Time
	q     Quorum
}

// run drives op to its end, applying each proposal; it returns how many
// batches it committed.
func (h *electHarness) run(op *Op) int {
	h.t.Helper()
	n := 0
	for !op.Done() {
		payload, err := EncodeBatch(op.Proposal())
		require.NoError(h.t, err)
		h.next++
		require.NoError(h.t, h.store.Apply(h.next, payload))
		n++
		op.Applied(Outcome{Image: h.store.Image(), Offset: h.next, Refused: h.store.Refusal(h.next), Now: h.now})
	}
	return n
}

func (h *electHarness) handle(c *ControllerCore, req kmsg.Request) (kmsg.Response, int) {
	h.t.Helper()
	op, err := c.Handle(h.q, h.store.Image(), h.now, req)
	require.NoError(h.t, err)
	n := h.run(op)
	return op.Response(), n
}

// apply commits recs as one batch.
func (h *electHarness) apply(recs ...Record) {
	h.t.Helper()
	payload, err := EncodeBatch(recs)
	require.NoError(h.t, err)
	h.next++
	require.NoError(h.t, h.store.Apply(h.next, payload))
	require.NoError(h.t, h.store.Refusal(h.next))
}

// newElectHarness is brokers 1-3 registered and unfenced, and topic t
// with t-0 on [1 2 3] led by 2 (1 in sync, not leading) and t-1 on
// [2 3 1] led by 2.
func newElectHarness(t *testing.T, c *ControllerCore) *electHarness {
	h := &electHarness{t: t, store: NewStore(), now: time.Unix(1000, 0), q: Quorum{Active: true, Term: 1}}
	for id := int32(1); id <= 3; id++ {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "c1", uuid.New()
		resp, _ := h.handle(c, reg)
		require.Zero(t, resp.(*kmsg.BrokerRegistrationResponse).ErrorCode)
	}
	for id := int32(1); id <= 3; id++ {
		b, _ := h.store.Image().Broker(id)
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, b.Epoch, int64(h.store.Image().Offset())
		resp, _ := h.handle(c, hb)
		require.False(t, resp.(*kmsg.BrokerHeartbeatResponse).IsFenced)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", -1, -1
	for i, rs := range [][]int32{{1, 2, 3}, {2, 3, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	}
	create.Topics = append(create.Topics, ct)
	resp, _ := h.handle(c, create)
	require.Zero(t, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	tp, _ := h.store.Image().Topic("t")
	p := tp.Partitions[0]
	st, _ := next(p, withLeader(p, 2, electISR))
	h.apply(change(tp, 0, st))
	return h
}

func (h *electHarness) partition(i int) Partition {
	tp, _ := h.store.Image().Topic("t")
	return tp.Partitions[i]
}

func electRequest(typ ElectionType, topics map[string][]int32, order ...string) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, int8(typ)
	for _, name := range order {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, topics[name]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// codes are the response's error codes by topic, in partition order.
func codes(resp *kmsg.ElectLeadersResponse) map[string][]int16 {
	out := map[string][]int16{}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			out[st.Topic] = append(out[st.Topic], sp.ErrorCode)
		}
	}
	return out
}

// ElectLeaders through the controller core: one batch for every election
// of a request, a partition named twice decided once, errors per
// partition, null topics meaning all, and NOT_CONTROLLER when inactive.
func TestControllerElectLeaders(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	before := h.partition(0)
	require.Equal(t, int32(2), before.Leader)

	req := electRequest(ElectPreferred, map[string][]int32{"t": {0, 1, 0, 9}, "u": {0}}, "t", "u")
	resp, batches := h.handle(c, req)
	require.Equal(t, 1, batches, "one batch")
	er := resp.(*kmsg.ElectLeadersResponse)
	require.Zero(t, er.ErrorCode)
	nn, unknown := kerr.ElectionNotNeeded.Code, kerr.UnknownTopicOrPartition.Code
	require.Equal(t, map[string][]int16{"t": {0, nn, 0, unknown}, "u": {unknown}}, codes(er))
	require.Contains(t, *er.Topics[0].Partitions[1].ErrorMessage, "already leads")
	after := h.partition(0)
	require.Equal(t, int32(1), after.Leader)
	require.Equal(t, before.LeaderEpoch+1, after.LeaderEpoch)
	require.Equal(t, before.PartitionEpoch+1, after.PartitionEpoch, "one change, though named twice")

	// Null topics: every partition; nothing to do, nothing committed.
	all := kmsg.NewPtrElectLeadersRequest()
	all.Version = 2
	resp, batches = h.handle(c, all)
	require.Zero(t, batches)
	require.Equal(t, map[string][]int16{"t": {nn, nn}}, codes(resp.(*kmsg.ElectLeadersResponse)))

	// v0 has no election type: preferred, whatever the field holds.
	v0 := electRequest(ElectUnclean, map[string][]int32{"t": {0}}, "t")
	v0.Version = 0
	resp, _ = h.handle(c, v0)
	require.Contains(t, *resp.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorMessage, "preferred replica")

	// Not the active controller: every partition and the top level say so.
	h.q = Quorum{}
	resp, batches = h.handle(c, kmsg.NewPtrElectLeadersRequest())
	require.Zero(t, batches)
	er = resp.(*kmsg.ElectLeadersResponse)
	require.Equal(t, kerr.NotController.Code, er.ErrorCode)
	require.Equal(t, map[string][]int16{"t": {kerr.NotController.Code, kerr.NotController.Code}}, codes(er))
}

// The periodic run moves a leadership back to its preferred replica, and
// only elects offline partitions when automatic balancing is off.
func TestControllerAutoRebalance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		leader   int32
	}{
		{"on", 0, 1},
		{"off", -1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: tc.interval})
			h := newElectHarness(t, c)
			// The first tick of a core runs it (the sessions are fresh).
			op := c.Tick(h.q, h.store.Image(), h.now)
			h.run(op)
			require.NoError(t, op.Err())
			require.Equal(t, tc.leader, h.partition(0).Leader)
		})
	}
}
