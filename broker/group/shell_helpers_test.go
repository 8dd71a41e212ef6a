package group_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/grouptest"
	"github.com/minikafka/minikafka/clock"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	sessionMs = 6000
	waitLimit = 10 * time.Second // a bound on waiting for goroutines, never asserted
)

type env struct {
	t   *testing.T
	log *grouptest.Log
	clk *clock.Manual
	c   *group.Coordinator
	cfg group.Config
}

// newEnv opens a coordinator over a memory log with a manual clock; topic
// "t" has 12 partitions, nothing else exists.
func newEnv(t *testing.T, mutate ...func(*group.Config)) *env {
	t.Helper()
	var ids atomic.Int64
	e := &env{t: t, log: grouptest.NewMemLog(), clk: clock.NewManual(start)}
	e.cfg = group.Config{
		Log:   e.log,
		Clock: e.clk,
		PartitionExists: func(topic string, p int32) bool {
			return topic == "t" && p >= 0 && p < 12
		},
		NewMemberID: func(clientID string) string { return fmt.Sprintf("%s-%d", clientID, ids.Add(1)) },
	}
	for _, m := range mutate {
		m(&e.cfg)
	}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	c, err := group.Open(e.cfg)
	require.NoError(e.t, err)
	e.c = c
	e.t.Cleanup(func() { c.Close() })
}

// restart closes the coordinator and opens another over the same log.
func (e *env) restart() {
	e.t.Helper()
	require.NoError(e.t, e.c.Close())
	e.open()
}

func joinReq(g, member string, version int16, instance string, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group = g
	r.MemberID = member
	r.SessionTimeoutMillis = sessionMs
	r.RebalanceTimeoutMillis = 30000
	r.ProtocolType = "consumer"
	if instance != "" {
		r.InstanceID = &instance
	}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = []byte(meta)
	r.Protocols = append(r.Protocols, p)
	return r
}

// joinAsync sends a JoinGroup in its own goroutine.
func (e *env) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- e.c.JoinGroup(context.Background(), group.Client{ID: "cl", Host: "/10.0.0.1"}, req) }()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

func (e *env) state(g string) group.State {
	d, ok := e.c.Describe(g)
	if !ok {
		return group.Dead
	}
	return d.State
}

// newMember does the two-step v9 join and returns the channel of the
// second, parked JoinGroup and the member id.
func (e *env) newMember(g string) (<-chan *kmsg.JoinGroupResponse, string) {
	e.t.Helper()
	r := recv(e.t, e.joinAsync(joinReq(g, "", 9, "", "sub")))
	require.Equal(e.t, kerr.MemberIDRequired.Code, r.ErrorCode)
	return e.joinAsync(joinReq(g, r.MemberID, 9, "", "sub")), r.MemberID
}

// stable forms a Stable group of n members, each assigned "a-<id>", and
// returns the member ids (leader first) and the generation.
func (e *env) stable(g string, n int) ([]string, int32) {
	e.t.Helper()
	var chans []<-chan *kmsg.JoinGroupResponse
	for range n {
		ch, _ := e.newMember(g)
		chans = append(chans, ch)
	}
	require.Eventually(e.t, func() bool {
		d, _ := e.c.Describe(g)
		return len(d.Members) == n && d.State == group.PreparingRebalance
	}, waitLimit, time.Millisecond, "all members parked")
	e.clk.Advance(group.DefaultInitialRebalanceDelay)
	var resps []*kmsg.JoinGroupResponse
	for _, ch := range chans {
		r := recv(e.t, ch)
		require.Zero(e.t, r.ErrorCode)
		resps = append(resps, r)
	}
	leader := resps[0].LeaderID
	ids := []string{leader}
	assign := map[string][]byte{}
	syncs := []<-chan *kmsg.SyncGroupResponse{}
	for _, r := range resps {
		assign[r.MemberID] = []byte("a-" + r.MemberID)
		if r.MemberID != leader {
			ids = append(ids, r.MemberID)
			syncs = append(syncs, e.syncAsync(g, r.MemberID, r.Generation, nil))
		}
	}
	syncs = append(syncs, e.syncAsync(g, leader, resps[0].Generation, assign))
	for _, ch := range syncs {
		require.Zero(e.t, recv(e.t, ch).ErrorCode)
	}
	return ids, resps[0].Generation
}

func (e *env) syncAsync(g, member string, gen int32, assign map[string][]byte) <-chan *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = g, member, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- e.c.SyncGroup(context.Background(), req) }()
	return ch
}

func (e *env) heartbeat(g, member string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = g, member, gen
	return e.c.Heartbeat(req).ErrorCode
}

type tpo struct {
	topic     string
	partition int32
	offset    int64
}

func commitReq(g, member string, gen int32, offsets ...tpo) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = g, member, gen
	for _, o := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = o.topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.partition, o.offset, 3
		md := "md"
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// commitCodes flattens an OffsetCommit response's codes.
func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetch returns the committed offset of each partition of topic "t" asked
// for (-1 when none).
func (e *env) fetch(g string, partitions ...int32) []int64 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = g
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = "t"
	rt.Partitions = partitions
	req.Topics = append(req.Topics, rt)
	resp := e.c.OffsetFetch(req)
	require.Zero(e.t, resp.ErrorCode)
	var out []int64
	for _, p := range resp.Topics[0].Partitions {
		require.Zero(e.t, p.ErrorCode)
		out = append(out, p.Offset)
	}
	return out
}

func (e *env) listGroups() map[string]string {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	resp := e.c.ListGroups(req)
	out := map[string]string{}
	for _, g := range resp.Groups {
		out[g.Group] = g.GroupState
	}
	return out
}
