package cluster

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addBroker registers and unfences broker id through the core.
func (h *electHarness) addBroker(c *ControllerCore, id int32) {
	h.t.Helper()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "c1", uuid.New()
	resp, _ := h.handle(c, reg)
	require.Zero(h.t, resp.(*kmsg.BrokerRegistrationResponse).ErrorCode)
	b, _ := h.store.Image().Broker(id)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, b.Epoch, int64(h.store.Image().Offset())
	hresp, _ := h.handle(c, hb)
	require.False(h.t, hresp.(*kmsg.BrokerHeartbeatResponse).IsFenced)
}

func reassignRequest(version int16, topic string, moves map[int32][]int32, order ...int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = version, true
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range order {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, moves[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func reassignCodes(resp *kmsg.AlterPartitionAssignmentsResponse) []int16 {
	var out []int16
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			out = append(out, sp.ErrorCode)
		}
	}
	return out
}

// The decision of one partition's reassignment on an image of brokers 1-4
// (5 never registered), t-0 on [1 2 3] led by 2: each case the error it
// must answer, or the state it must start.
func TestReassignDecision(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	h.addBroker(c, 4)
	img := h.store.Image()
	cur := h.partition(0)
	s := Settings{}.WithDefaults()
	for _, tc := range []struct {
		name    string
		topic   string
		p       int32
		target  []int32
		fixedRF bool
		err     error
		want    *Partition // nil with no error: nothing to do
	}{
		{name: "unknown topic", topic: "u", target: []int32{1}, err: kerr.UnknownTopicOrPartition},
		{name: "unknown partition", topic: "t", p: 7, target: []int32{1}, err: kerr.UnknownTopicOrPartition},
		{name: "negative partition", topic: "t", p: -1, target: []int32{1}, err: kerr.UnknownTopicOrPartition},
		{name: "empty target", topic: "t", target: []int32{}, err: kerr.InvalidReplicaAssignment},
		{name: "repeated broker", topic: "t", target: []int32{2, 3, 2}, err: kerr.InvalidReplicaAssignment},
		{name: "never registered broker", topic: "t", target: []int32{2, 3, 5}, err: kerr.InvalidReplicaAssignment},
		{name: "negative broker", topic: "t", target: []int32{2, -1}, err: kerr.InvalidReplicaAssignment},
		{name: "cancel without a reassignment", topic: "t", err: kerr.NoReassignmentInProgress},
		{name: "replication factor fixed", topic: "t", target: []int32{1, 2, 3, 4}, fixedRF: true, err: kerr.InvalidReplicationFactor},
		{name: "same target", topic: "t", target: []int32{1, 2, 3}},
		{name: "move onto 4", topic: "t", target: []int32{2, 3, 4}, fixedRF: true, want: &Partition{
			Replicas: []int32{2, 3, 4, 1}, ISR: []int32{2, 3, 1}, Leader: 2, LeaderEpoch: cur.LeaderEpoch,
			PartitionEpoch: cur.PartitionEpoch + 1, AddingReplicas: []int32{4}, RemovingReplicas: []int32{1},
		}},
		{name: "grow", topic: "t", target: []int32{1, 2, 3, 4}, want: &Partition{
			Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: cur.LeaderEpoch,
			PartitionEpoch: cur.PartitionEpoch + 1, AddingReplicas: []int32{4},
		}},
		{name: "removing the leader completes at once", topic: "t", target: []int32{3, 1}, want: &Partition{
			Replicas: []int32{3, 1}, ISR: []int32{3, 1}, Leader: 3, LeaderEpoch: cur.LeaderEpoch + 1,
			PartitionEpoch: cur.PartitionEpoch + 1,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := s.Reassign(img, tc.topic, tc.p, tc.target, !tc.fixedRF)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Nil(t, rec)
				return
			}
			require.NoError(t, err)
			if tc.want == nil {
				require.Nil(t, rec, "nothing to do")
				return
			}
			require.NotNil(t, rec)
			require.Equal(t, *tc.want, rec.ChangePartition.State)
			_, err = img.Apply(img.Offset()+1, []Record{*rec})
			require.NoError(t, err, "the metadata takes the decision")
		})
	}
}

// A reassignment through the controller core: started by one request, in
// one batch; listed while in progress; completed by the leader's ISR
// change that takes in the last adding replica, the removed leader
// replaced in a new leader epoch; a cancellation back to the original
// replicas; NOT_CONTROLLER when inactive.
func TestControllerReassignments(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	h.addBroker(c, 4)

	// t-0 [1 2 3] led by 2 moves onto [3 4 1]; t-1 is cancelled though
	// not moving; t-9 does not exist; t-0 named twice is decided once.
	req := reassignRequest(1, "t", map[int32][]int32{0: {3, 4, 1}, 9: {1}}, 0, 1, 9, 0)
	resp, batches := h.handle(c, req)
	require.Equal(t, 1, batches)
	ar := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	require.Zero(t, ar.ErrorCode)
	require.True(t, ar.AllowReplicationFactorChange)
	require.Equal(t, []int16{0, kerr.NoReassignmentInProgress.Code, kerr.UnknownTopicOrPartition.Code, 0}, reassignCodes(ar))
	p := h.partition(0)
	require.Equal(t, []int32{3, 4, 1, 2}, p.Replicas)
	require.Equal(t, []int32{4}, p.AddingReplicas)
	require.Equal(t, []int32{2}, p.RemovingReplicas)
	require.Equal(t, int32(2), p.Leader, "the leader leads on while 4 catches up")

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lresp, batches := h.handle(c, list)
	require.Zero(t, batches)
	lr := lresp.(*kmsg.ListPartitionReassignmentsResponse)
	require.Len(t, lr.Topics, 1)
	require.Equal(t, "t", lr.Topics[0].Topic)
	require.Len(t, lr.Topics[0].Partitions, 1, "only the partition moving")
	lp := lr.Topics[0].Partitions[0]
	require.Equal(t, []int32{3, 4, 1, 2}, lp.Replicas)
	require.Equal(t, []int32{4}, lp.AddingReplicas)
	require.Equal(t, []int32{2}, lp.RemovingReplicas)

	// The leader, 2, takes 4 into the ISR: the move completes, 2 leaves.
	tp, _ := h.store.Image().Topic("t")
	alter := kmsg.NewPtrAlterPartitionRequest()
	alter.Version, alter.BrokerID = 3, 2
	b2, _ := h.store.Image().Broker(2)
	alter.BrokerEpoch = b2.Epoch
	at := kmsg.NewAlterPartitionRequestTopic()
	at.TopicID = tp.ID
	ap := kmsg.NewAlterPartitionRequestTopicPartition()
	ap.Partition, ap.LeaderEpoch, ap.PartitionEpoch = 0, p.LeaderEpoch, p.PartitionEpoch
	for _, id := range []int32{3, 4, 1, 2} {
		b, _ := h.store.Image().Broker(id)
		m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		m.BrokerID, m.BrokerEpoch = id, b.Epoch
		ap.NewEpochISR = append(ap.NewEpochISR, m)
	}
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	aresp, _ := h.handle(c, alter)
	asp := aresp.(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0]
	require.Zero(t, asp.ErrorCode)
	done := h.partition(0)
	require.Equal(t, []int32{3, 4, 1}, done.Replicas)
	require.Equal(t, []int32{3, 4, 1}, done.ISR)
	require.Empty(t, done.AddingReplicas)
	require.Empty(t, done.RemovingReplicas)
	require.Equal(t, int32(3), done.Leader, "the first of the target in the ISR")
	require.Equal(t, p.LeaderEpoch+1, done.LeaderEpoch)
	require.Equal(t, done.Leader, asp.LeaderID, "the answer says who leads now")
	lresp, _ = h.handle(c, list)
	require.Empty(t, lresp.(*kmsg.ListPartitionReassignmentsResponse).Topics)

	// t-1 [2 3 1] moves onto [4 3 1], then is cancelled.
	resp, _ = h.handle(c, reassignRequest(0, "t", map[int32][]int32{1: {4, 3, 1}}, 1))
	require.Equal(t, []int16{0}, reassignCodes(resp.(*kmsg.AlterPartitionAssignmentsResponse)))
	require.Equal(t, []int32{4, 3, 1, 2}, h.partition(1).Replicas)
	resp, _ = h.handle(c, reassignRequest(0, "t", map[int32][]int32{1: nil}, 1))
	require.Equal(t, []int16{0}, reassignCodes(resp.(*kmsg.AlterPartitionAssignmentsResponse)))
	back := h.partition(1)
	require.Equal(t, []int32{3, 1, 2}, back.Replicas, "the original replicas, in the order of the move's (as Kafka)")
	require.False(t, back.Reassigning())

	// v1 with AllowReplicationFactorChange false.
	fixed := reassignRequest(1, "t", map[int32][]int32{1: {4, 3}}, 1)
	fixed.AllowReplicationFactorChange = false
	resp, _ = h.handle(c, fixed)
	require.Equal(t, []int16{kerr.InvalidReplicationFactor.Code}, reassignCodes(resp.(*kmsg.AlterPartitionAssignmentsResponse)))

	h.q = Quorum{}
	resp, batches = h.handle(c, reassignRequest(1, "t", map[int32][]int32{1: {4, 3, 1}}, 1))
	require.Zero(t, batches)
	ar = resp.(*kmsg.AlterPartitionAssignmentsResponse)
	require.Equal(t, kerr.NotController.Code, ar.ErrorCode)
	require.Equal(t, []int16{kerr.NotController.Code}, reassignCodes(ar))
	lresp, _ = h.handle(c, list)
	require.Equal(t, kerr.NotController.Code, lresp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
}

// A reassignment whose adding replicas are all in the ISR but whose
// removed leader has no active successor waits; once one is active the
// controller's tick completes it (no ISR change comes to do it).
func TestTickCompletesReassignment(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	h.addBroker(c, 4)
	tp, _ := h.store.Image().Topic("t")
	cur := h.partition(0)
	// 2 leads t-0, moving onto [4]; 4 is in the ISR but fenced (a state
	// only a hand-made record reaches: fencing takes a broker out of ISRs).
	b4, _ := h.store.Image().Broker(4)
	moving := Partition{
		Replicas: []int32{4, 1, 2, 3}, ISR: []int32{4, 2}, Leader: 2, LeaderEpoch: cur.LeaderEpoch,
		PartitionEpoch: cur.PartitionEpoch + 1, AddingReplicas: []int32{4}, RemovingReplicas: []int32{1, 2, 3},
	}
	h.apply(Record{FenceBroker: &BrokerRef{ID: 4, Epoch: b4.Epoch}}, change(tp, 0, moving))
	s := Settings{}.WithDefaults()
	require.Empty(t, s.CompleteReassignments(h.store.Image()), "no active replica of the target could lead")
	_, err := s.Reassign(h.store.Image(), "t", 0, []int32{4}, true)
	require.NoError(t, err, "asking again is nothing to do")

	h.apply(Record{UnfenceBroker: &BrokerRef{ID: 4, Epoch: b4.Epoch}})
	op := c.Tick(h.q, h.store.Image(), h.now)
	h.run(op)
	require.NoError(t, op.Err())
	done := h.partition(0)
	require.Equal(t, []int32{4}, done.Replicas)
	require.Equal(t, []int32{4}, done.ISR)
	require.Equal(t, int32(4), done.Leader)
	require.Equal(t, moving.LeaderEpoch+1, done.LeaderEpoch)
	require.False(t, done.Reassigning())
}

// The snapshot keeps a reassignment in progress.
func TestSnapshotKeepsReassignment(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	h.addBroker(c, 4)
	h.handle(c, reassignRequest(0, "t", map[int32][]int32{0: {2, 3, 4}}, 0))
	b, err := h.store.Image().MarshalSnapshot()
	require.NoError(t, err)
	m, err := UnmarshalSnapshot(b)
	require.NoError(t, err)
	tp, _ := m.Topic("t")
	require.Equal(t, h.partition(0), tp.Partitions[0])
	require.Equal(t, []int32{4}, tp.Partitions[0].AddingReplicas)
}

// A cancellation that would leave no in-sync replica, or no leader, is
// refused: the move stays, and completes or is cancelled later.
func TestReassignCancelRefused(t *testing.T) {
	c := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1, RebalanceInterval: -1})
	h := newElectHarness(t, c)
	h.addBroker(c, 4)
	h.addBroker(c, 5)
	tp, _ := h.store.Image().Topic("t")
	cur := h.partition(0)
	// t-0 moves from [1 2 3] onto [4 5]; 4 caught up and leads, the
	// original replicas all fell out of the ISR.
	moving := Partition{
		Replicas: []int32{4, 5, 1, 2, 3}, ISR: []int32{4}, Leader: 4, LeaderEpoch: cur.LeaderEpoch + 1,
		PartitionEpoch: cur.PartitionEpoch + 1, AddingReplicas: []int32{4, 5}, RemovingReplicas: []int32{1, 2, 3},
	}
	h.apply(change(tp, 0, moving))
	s := Settings{}.WithDefaults()
	_, err := s.Reassign(h.store.Image(), "t", 0, nil, true)
	require.ErrorIs(t, err, kerr.InvalidReplicaAssignment)
	require.Contains(t, err.Error(), "none of the ISR")

	// 2 is back in the ISR, but fenced: it could not lead in 4's place.
	b2, _ := h.store.Image().Broker(2)
	moving.ISR, moving.PartitionEpoch = []int32{4, 2}, moving.PartitionEpoch+1
	h.apply(change(tp, 0, moving), Record{FenceBroker: &BrokerRef{ID: 2, Epoch: b2.Epoch}})
	_, err = s.Reassign(h.store.Image(), "t", 0, nil, true)
	require.ErrorIs(t, err, kerr.InvalidReplicaAssignment)
	require.Contains(t, err.Error(), "could lead")

	h.apply(Record{UnfenceBroker: &BrokerRef{ID: 2, Epoch: b2.Epoch}})
	rec, err := s.Reassign(h.store.Image(), "t", 0, nil, true)
	require.NoError(t, err)
	back := rec.ChangePartition.State
	require.Equal(t, []int32{1, 2, 3}, back.Replicas)
	require.Equal(t, []int32{2}, back.ISR)
	require.Equal(t, int32(2), back.Leader)
	require.Equal(t, moving.LeaderEpoch+1, back.LeaderEpoch)
}
