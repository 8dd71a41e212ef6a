package node

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var t0 = time.Unix(1_700_000_000, 0)

func newTestLifecycle(voters []int32) *Lifecycle {
	l := NewLifecycle(LifecycleConfig{
		NodeID: 2, ClusterID: "c", Incarnation: uuid.New(), PreviousEpoch: -1, CheckVoters: voters,
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: time.Second,
	})
	l.Start("h", 9092)
	return l
}

func registered(epoch int64) *kmsg.BrokerRegistrationResponse {
	r := kmsg.NewPtrBrokerRegistrationResponse()
	r.BrokerEpoch = epoch
	return r
}

func heartbeatResp(fenced, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	r := kmsg.NewPtrBrokerHeartbeatResponse()
	r.IsFenced, r.ShouldShutdown = fenced, shutdown
	return r
}

func TestLifecycleRegistersThenHeartbeats(t *testing.T) {
	l := newTestLifecycle(nil)
	c, ok := l.Next(t0, 0)
	require.True(t, ok)
	reg := c.Req.(*kmsg.BrokerRegistrationRequest)
	require.Equal(t, int64(-1), reg.PreviousBrokerEpoch)
	require.Equal(t, ToController, c.To)
	_, ok = l.Next(t0, 0)
	require.False(t, ok, "one call in flight at a time")

	out := l.Answer(t0, c, registered(7), nil)
	require.True(t, out.Standing)
	require.Equal(t, int64(7), l.Epoch())

	c, ok = l.Next(t0, 3)
	require.True(t, ok, "a heartbeat at once after registering")
	hb := c.Req.(*kmsg.BrokerHeartbeatRequest)
	require.Equal(t, int64(7), hb.BrokerEpoch)
	require.Equal(t, int64(3), hb.CurrentMetadataOffset)
	l.Answer(t0, c, heartbeatResp(true, false), nil)
	_, ok = l.Next(t0.Add(10*time.Millisecond), 3)
	require.False(t, ok, "not due before the interval")
	c, ok = l.Next(t0.Add(10*time.Millisecond), 7)
	require.True(t, ok, "fenced, and the metadata reached the registration: heartbeat at once")
	out = l.Answer(t0, c, heartbeatResp(false, false), nil)
	require.True(t, out.Standing)
	require.True(t, l.Ready())
}

func TestLifecycleRegistrationErrors(t *testing.T) {
	l := newTestLifecycle(nil)
	c, _ := l.Next(t0, 0)
	out := l.Answer(t0, c, nil, errors.New("connection refused"))
	require.NoError(t, out.Fatal)
	_, ok := l.Next(t0, 0)
	require.False(t, ok, "a failed registration waits an interval")
	c, ok = l.Next(t0.Add(100*time.Millisecond), 0)
	require.True(t, ok)

	dup := kmsg.NewPtrBrokerRegistrationResponse()
	dup.ErrorCode = kerr.DuplicateBrokerRegistration.Code
	require.NoError(t, l.Answer(t0, c, dup, nil).Fatal, "the previous incarnation's session may not have expired yet")
	c, _ = l.Next(t0.Add(2*time.Second), 0)
	require.NoError(t, l.Answer(t0.Add(2*time.Second), c, dup, nil).Fatal, "refused for longer than a session: retried still (controller failovers grant old sessions a grace)")
	c, _ = l.Next(t0.Add(30*time.Second), 0)
	require.NoError(t, l.Answer(t0.Add(30*time.Second), c, dup, nil).Fatal, "refused for many sessions: said, and retried")
	c, ok = l.Next(t0.Add(31*time.Second), 0)
	require.True(t, ok, "the registration is sent again")
	reg := kmsg.NewPtrBrokerRegistrationResponse()
	reg.BrokerEpoch = 7
	require.True(t, l.Answer(t0.Add(31*time.Second), c, reg, nil).Standing, "and registers once the old session is gone")

	l = newTestLifecycle(nil)
	c, _ = l.Next(t0, 0)
	bad := kmsg.NewPtrBrokerRegistrationResponse()
	bad.ErrorCode = kerr.InconsistentClusterID.Code
	require.ErrorIs(t, l.Answer(t0, c, bad, nil).Fatal, kerr.InconsistentClusterID)
}

func TestLifecycleRegistersAgainOnStaleEpoch(t *testing.T) {
	l := newTestLifecycle(nil)
	c, _ := l.Next(t0, 0)
	l.Answer(t0, c, registered(7), nil)
	c, _ = l.Next(t0, 7)
	stale := heartbeatResp(false, false)
	stale.ErrorCode = kerr.StaleBrokerEpoch.Code
	require.True(t, l.Answer(t0, c, stale, nil).Standing)
	require.Zero(t, l.Epoch())
	c, ok := l.Next(t0, 7)
	require.True(t, ok)
	require.IsType(t, &kmsg.BrokerRegistrationRequest{}, c.Req)
}

func TestLifecycleChecksVoters(t *testing.T) {
	dq := func(ids ...int32) *kmsg.DescribeQuorumResponse {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = ClusterMetadataTopic
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		return DescribeQuorum(req, func(p *kmsg.DescribeQuorumResponseTopicPartition) {
			DescribeAsFollower(p, -1, 1, ids)
		})
	}
	l := newTestLifecycle([]int32{1, 3})
	c, _ := l.Next(t0, 0)
	require.IsType(t, &kmsg.DescribeQuorumRequest{}, c.Req)
	require.Equal(t, int32(1), c.To)
	l.Answer(t0, c, nil, errors.New("down"))
	c, _ = l.Next(t0, 0)
	require.IsType(t, &kmsg.BrokerRegistrationRequest{}, c.Req, "no voter answering does not hold the registration")
	l.Answer(t0, c, nil, errors.New("down"))
	c, _ = l.Next(t0.Add(time.Second), 0)
	require.Equal(t, int32(3), c.To, "the next voter is asked next")
	require.Error(t, l.Answer(t0, c, dq(1, 3, 4), nil).Fatal, "another quorum")

	l = newTestLifecycle([]int32{3, 1})
	c, _ = l.Next(t0, 0)
	require.NoError(t, l.Answer(t0, c, dq(1, 3), nil).Fatal)
	c, _ = l.Next(t0, 0)
	require.IsType(t, &kmsg.BrokerRegistrationRequest{}, c.Req)
}

func TestLifecycleControlledShutdown(t *testing.T) {
	l := newTestLifecycle(nil)
	c, _ := l.Next(t0, 0)
	l.Answer(t0, c, registered(7), nil)
	c, _ = l.Next(t0, 7)
	// The shutdown begins while a heartbeat without it is out: its answer
	// must not push the next one back an interval (a clock that does not
	// move would wait for good).
	l.BeginShutdown()
	l.Answer(t0, c, heartbeatResp(false, false), nil)
	c, ok := l.Next(t0, 7)
	require.True(t, ok)
	require.True(t, c.Req.(*kmsg.BrokerHeartbeatRequest).WantShutdown)
	l.Answer(t0, c, heartbeatResp(false, false), nil)
	_, ok = l.Next(t0, 7)
	require.False(t, ok)
	c, ok = l.Next(t0, 8)
	require.True(t, ok, "the metadata moved: ask again")
	l.Answer(t0, c, heartbeatResp(true, true), nil)
	require.True(t, l.Released())
	_, ok = l.Next(t0.Add(time.Hour), 9)
	require.False(t, ok, "released: nothing more to send")

	never := newTestLifecycle(nil)
	never.BeginShutdown()
	require.True(t, never.Released(), "never registered: nothing to move")

	stuck := newTestLifecycle(nil)
	c, _ = stuck.Next(t0, 0)
	stuck.Answer(t0, c, registered(7), nil)
	stuck.BeginShutdown()
	now := t0
	for range maxShutdownHeartbeats {
		now = now.Add(time.Second)
		c, ok = stuck.Next(now, 7)
		require.True(t, ok)
		stuck.Answer(now, c, heartbeatResp(false, false), nil)
	}
	require.True(t, stuck.Released(), "a controller that never releases the broker does not keep it")
}

func TestProducerIDs(t *testing.T) {
	p := NewProducerIDs(2)
	_, ok := p.Take()
	require.False(t, ok)
	_, ok = p.Next(0)
	require.False(t, ok, "not registered")
	c, ok := p.Next(5)
	require.True(t, ok)
	require.Equal(t, int64(5), c.Req.(*kmsg.AllocateProducerIDsRequest).BrokerEpoch)
	_, ok = p.Next(5)
	require.False(t, ok, "one request in flight")
	_, _, err := p.Answer(nil, errors.New("down"))
	require.ErrorIs(t, err, kerr.CoordinatorNotAvailable)
	c, _ = p.Next(5)
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	resp.ProducerIDStart, resp.ProducerIDLen = 100, 2
	_, _, err = p.Answer(resp, nil)
	require.NoError(t, err)
	for _, want := range []int64{100, 101} {
		id, ok := p.Take()
		require.True(t, ok)
		require.Equal(t, want, id)
	}
	_, ok = p.Take()
	require.False(t, ok)
}
