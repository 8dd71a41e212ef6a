package cluster

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The core without a shell: each operation says what to commit and goes
// on once the test applies it, as the simulator drives it.
func TestControllerCoreOps(t *testing.T) {
	core := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1})
	store := NewStore()
	var next uint64
	now := time.Unix(1000, 0)
	q := Quorum{Active: true, Term: 1}
	run := func(op *Op) *Op {
		t.Helper()
		proposals := 0
		for !op.Done() {
			recs := op.Proposal()
			require.NotNil(t, recs, "an operation neither done nor proposing")
			payload, err := EncodeBatch(recs)
			require.NoError(t, err)
			next++
			require.NoError(t, store.Apply(next, payload))
			proposals++
			op.Applied(Outcome{Image: store.Image(), Offset: next, Refused: store.Refusal(next), Now: now})
		}
		return op
	}
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 1, "c1", uuid.New()
	op, err := core.Handle(q, store.Image(), now, reg)
	require.NoError(t, err)
	require.Equal(t, []Record{{Barrier: &Barrier{}}, {Bootstrap: &Bootstrap{ClusterID: "c1"}}}, op.Proposal(), "a new term's barrier first")
	resp := run(op).Response().(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, int64(2), resp.BrokerEpoch)

	// A lost proposal answers NOT_CONTROLLER; the next term starts with a
	// barrier again.
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, 2, 2
	op, _ = core.Handle(Quorum{Active: true, Term: 2}, store.Image(), now, hb)
	require.Len(t, op.Proposal(), 1)
	op.Applied(Outcome{Image: store.Image(), Lost: ErrNotController, Now: now})
	require.True(t, op.Done())
	require.Equal(t, int16(41), op.Response().(*kmsg.BrokerHeartbeatResponse).ErrorCode, "NOT_CONTROLLER")
	op, _ = core.Handle(Quorum{Active: true, Term: 2}, store.Image(), now, hb)
	hr := run(op).Response().(*kmsg.BrokerHeartbeatResponse)
	require.Zero(t, hr.ErrorCode)
	require.False(t, hr.IsFenced)

	// Not active: answered at once, nothing proposed.
	op, _ = core.Handle(Quorum{}, store.Image(), now, hb)
	require.True(t, op.Done())

	// Sessions expire on the core's own notion of time.
	op = run(core.Tick(Quorum{Active: true, Term: 2}, store.Image(), now.Add(10*time.Second)))
	require.NoError(t, op.Err())
	b, _ := store.Image().Broker(1)
	require.True(t, b.Fenced)
}

// A new controller gives every broker FailoverGrace to heartbeat, except
// the voters whose connections closed before it took over (the previous
// controller, killed): those it fences at its first tick.
func TestNewControllerFencesTheGoneAtOnce(t *testing.T) {
	store := NewStore()
	var next uint64
	now := time.Unix(1000, 0)
	run := func(op *Op) *Op {
		t.Helper()
		for !op.Done() {
			payload, err := EncodeBatch(op.Proposal())
			require.NoError(t, err)
			next++
			require.NoError(t, store.Apply(next, payload))
			op.Applied(Outcome{Image: store.Image(), Offset: next, Refused: store.Refusal(next), Now: now})
		}
		return op
	}
	first := NewControllerCore(CoreConfig{NodeID: 1, ClusterID: "c1", Seed: 1})
	for id := int32(1); id <= 3; id++ {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "c1", uuid.New()
		op, err := first.Handle(Quorum{Active: true, Term: 1}, store.Image(), now, reg)
		require.NoError(t, err)
		require.Zero(t, run(op).Response().(*kmsg.BrokerRegistrationResponse).ErrorCode)
	}
	for id := int32(1); id <= 3; id++ {
		b, _ := store.Image().Broker(id)
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, b.Epoch, int64(store.Image().Offset())
		op, _ := first.Handle(Quorum{Active: true, Term: 1}, store.Image(), now, hb)
		require.False(t, run(op).Response().(*kmsg.BrokerHeartbeatResponse).IsFenced, "broker %d", id)
	}

	// Controller 1 dies; 2 takes over, its connection from 1 closed.
	second := NewControllerCore(CoreConfig{NodeID: 2, ClusterID: "c1", Seed: 2})
	now = now.Add(100 * time.Millisecond)
	q := Quorum{Active: true, Term: 2, Gone: []int32{1}}
	require.NoError(t, run(second.Tick(q, store.Image(), now)).Err())
	now = now.Add(100 * time.Millisecond)
	require.NoError(t, run(second.Tick(q, store.Image(), now)).Err())
	for id, fenced := range map[int32]bool{1: true, 2: false, 3: false} {
		b, _ := store.Image().Broker(id)
		require.Equal(t, fenced, b.Fenced, "broker %d, %v after the takeover (grace %v)", id, 200*time.Millisecond, DefaultFailoverGrace)
	}
}
