package group_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/grouptest"
)

func TestGroupLifecycle(t *testing.T) {
	e := newEnv(t)
	ids, gen := e.stable("g", 2)
	require.Equal(t, int32(1), gen)
	assert.Zero(t, e.heartbeat("g", ids[1], gen))

	codes := commitCodes(e.c.OffsetCommit(commitReq("g", ids[0], gen, tpo{"t", 0, 10}, tpo{"t", 1, 11})))
	assert.Equal(t, []int16{0, 0}, codes)
	assert.Equal(t, []int64{10, 11, -1}, e.fetch("g", 0, 1, 2))

	d, ok := e.c.Describe("g")
	require.True(t, ok)
	assert.Equal(t, group.Stable, d.State)
	require.Len(t, d.Members, 2)
	assert.Equal(t, "cl", d.Members[0].ClientID)
	assert.Equal(t, "/10.0.0.1", d.Members[0].ClientHost)
	assert.Equal(t, []byte("a-"+d.Members[0].MemberID), d.Members[0].Assignment)
	assert.Equal(t, map[string]string{"g": "Stable"}, e.listGroups())

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	leave.Group = "g"
	for _, id := range append(ids, "stranger") {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		leave.Members = append(leave.Members, m)
	}
	lr := e.c.LeaveGroup(leave)
	require.Zero(t, lr.ErrorCode)
	require.Len(t, lr.Members, 3)
	assert.Zero(t, lr.Members[0].ErrorCode)
	assert.Zero(t, lr.Members[1].ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, lr.Members[2].ErrorCode)
	assert.Equal(t, group.Empty, e.state("g"), "offsets keep the group")
	assert.Equal(t, []int64{10, 11}, e.fetch("g", 0, 1))

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"g", "nope"}
	dr := e.c.DeleteGroups(context.Background(), del)
	assert.Zero(t, dr.Groups[0].ErrorCode)
	assert.Equal(t, kerr.GroupIDNotFound.Code, dr.Groups[1].ErrorCode)
	assert.Equal(t, []int64{-1, -1}, e.fetch("g", 0, 1))
	assert.Empty(t, e.listGroups())

	e.restart()
	assert.Empty(t, e.listGroups(), "deleted for good")
}

func TestCommitIsAnsweredAndVisibleOnlyOnceDurable(t *testing.T) {
	e := newEnv(t)
	e.log.HoldDurable()
	appends := e.log.Appends()
	done := make(chan *kmsg.OffsetCommitResponse, 1)
	go func() { done <- e.c.OffsetCommit(commitReq("simple", "", -1, tpo{"t", 4, 40})) }()
	require.Eventually(t, func() bool { return e.log.Appends() > appends }, waitLimit, time.Millisecond, "the commit is appended")
	assert.Equal(t, []int64{-1}, e.fetch("simple", 4), "not durable: not visible")
	select {
	case <-done:
		t.Fatal("commit answered before it was durable")
	default:
	}
	e.log.ReleaseDurable()
	assert.Equal(t, []int16{0}, commitCodes(recv(t, done)))
	assert.Equal(t, []int64{40}, e.fetch("simple", 4))
}

func TestRestartRestoresGroupsAndOffsets(t *testing.T) {
	e := newEnv(t)
	ids, gen := e.stable("g", 2)
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("g", ids[1], gen, tpo{"t", 7, 70}))))
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("g", ids[1], gen, tpo{"t", 7, 71}))))
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("solo", "", -1, tpo{"t", 0, 5}))))

	e.restart()
	assert.Equal(t, map[string]string{"g": "Stable", "solo": "Empty"}, e.listGroups())
	assert.Equal(t, []int64{71}, e.fetch("g", 7))
	assert.Equal(t, []int64{5}, e.fetch("solo", 0))
	// Members go on where they were: same ids, same generation, same
	// assignment, no rebalance.
	for _, id := range ids {
		assert.Zero(t, e.heartbeat("g", id, gen))
	}
	s := recv(t, e.syncAsync("g", ids[1], gen, nil))
	require.Zero(t, s.ErrorCode)
	assert.Equal(t, []byte("a-"+ids[1]), s.MemberAssignment)
	// Those that do not come back expire after their session.
	e.clk.Advance(sessionMs * time.Millisecond)
	require.Eventually(t, func() bool { return e.state("g") == group.Empty }, waitLimit, time.Millisecond, "members expired")
}

func TestSessionExpiryOnTheClock(t *testing.T) {
	e := newEnv(t)
	ids, gen := e.stable("g", 2)
	for range 3 {
		e.clk.Advance(sessionMs / 3 * time.Millisecond)
		e.heartbeat("g", ids[0], gen)
	}
	require.Eventually(t, func() bool { return e.state("g") == group.PreparingRebalance }, waitLimit, time.Millisecond, "the silent member is removed")
	assert.Equal(t, kerr.RebalanceInProgress.Code, e.heartbeat("g", ids[0], gen))
	assert.Equal(t, kerr.UnknownMemberID.Code, e.heartbeat("g", ids[1], gen))
	r := recv(t, e.joinAsync(joinReq("g", ids[0], 9, "", "sub")))
	require.Zero(t, r.ErrorCode)
	assert.Len(t, r.Members, 1)
	assert.Equal(t, gen+1, r.Generation)
}

func TestStaticMemberRestartThroughCoordinator(t *testing.T) {
	e := newEnv(t)
	var chans []<-chan *kmsg.JoinGroupResponse
	for _, inst := range []string{"a", "b"} {
		chans = append(chans, e.joinAsync(joinReq("g", "", 9, inst, "sub")))
	}
	require.Eventually(t, func() bool { d, _ := e.c.Describe("g"); return len(d.Members) == 2 }, waitLimit, time.Millisecond, "both parked")
	e.clk.Advance(group.DefaultInitialRebalanceDelay)
	r0, r1 := recv(t, chans[0]), recv(t, chans[1])
	leader, follower := r0, r1
	if r1.LeaderID == r1.MemberID {
		leader, follower = r1, r0
	}
	fs := e.syncAsync("g", follower.MemberID, 1, nil)
	require.Zero(t, recv(t, e.syncAsync("g", leader.MemberID, 1, map[string][]byte{
		leader.MemberID: []byte("L"), follower.MemberID: []byte("F"),
	})).ErrorCode)
	require.Zero(t, recv(t, fs).ErrorCode)

	// The follower's process restarts with the same instance id.
	inst := "a"
	if follower == r1 {
		inst = "b"
	}
	again := recv(t, e.joinAsync(joinReq("g", "", 9, inst, "sub")))
	require.Zero(t, again.ErrorCode)
	assert.Equal(t, int32(1), again.Generation)
	s := recv(t, e.syncAsync("g", again.MemberID, 1, nil))
	assert.Equal(t, []byte("F"), s.MemberAssignment)
	assert.Zero(t, e.heartbeat("g", leader.MemberID, 1), "the leader saw no rebalance")
}

func TestCloseAnswersParkedRequests(t *testing.T) {
	e := newEnv(t)
	ch, _ := e.newMember("g")
	require.Eventually(t, func() bool { return e.state("g") == group.PreparingRebalance }, waitLimit, time.Millisecond, "parked")
	require.NoError(t, e.c.Close())
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, recv(t, ch).ErrorCode)
	r := recv(t, e.joinAsync(joinReq("g", "", 9, "", "sub")))
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, r.ErrorCode)
	assert.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code},
		commitCodes(e.c.OffsetCommit(commitReq("x", "", -1, tpo{"t", 0, 1}))))
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, e.heartbeat("g", "m", 1))
}

func TestStoreFailures(t *testing.T) {
	t.Run("commit append fails", func(t *testing.T) {
		e := newEnv(t)
		e.log.FailAppends(grouptest.ErrInjected)
		codes := commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 0, 1})))
		assert.Equal(t, []int16{kerr.UnknownServerError.Code}, codes)
		assert.Empty(t, e.listGroups(), "the group it would have created is dropped")
		e.log.FailAppends(nil)
		assert.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 0, 1}))))
	})
	t.Run("commit not durable", func(t *testing.T) {
		e := newEnv(t)
		e.log.FailDurable(kerr.NotEnoughReplicas)
		codes := commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 0, 1})))
		// As Kafka answers it: the client retries at the coordinator.
		assert.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes)
		assert.Equal(t, []int64{-1}, e.fetch("s", 0))
	})
	t.Run("assignment not durable", func(t *testing.T) {
		e := newEnv(t)
		ch, id := e.newMember("g")
		require.Eventually(t, func() bool { return e.state("g") == group.PreparingRebalance }, waitLimit, time.Millisecond, "parked")
		e.clk.Advance(group.DefaultInitialRebalanceDelay)
		require.Zero(t, recv(t, ch).ErrorCode)
		e.log.FailDurable(grouptest.ErrInjected)
		s := recv(t, e.syncAsync("g", id, 1, map[string][]byte{id: []byte("x")}))
		assert.Equal(t, kerr.UnknownServerError.Code, s.ErrorCode)
		require.Eventually(t, func() bool { return e.state("g") != group.Stable }, waitLimit, time.Millisecond, "back to rebalancing")
		e.log.FailDurable(nil)
		r := recv(t, e.joinAsync(joinReq("g", id, 9, "", "sub")))
		require.Zero(t, r.ErrorCode)
		assert.Equal(t, int32(2), r.Generation)
		assert.Zero(t, recv(t, e.syncAsync("g", id, 2, map[string][]byte{id: []byte("x")})).ErrorCode)
	})
}

func TestListAndDescribeFilters(t *testing.T) {
	e := newEnv(t)
	e.stable("busy", 1)
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("idle", "", -1, tpo{"t", 0, 1}))))

	cases := []struct {
		name    string
		version int16
		states  []string
		types   []string
		want    []string
	}{
		{"all", 3, nil, nil, []string{"busy", "idle"}},
		{"stable", 4, []string{"stable"}, nil, []string{"busy"}},
		{"empty or dead", 4, []string{"Empty", "Dead"}, nil, []string{"idle"}},
		{"classic", 5, nil, []string{"Classic"}, []string{"busy", "idle"}},
		{"consumer type (KIP-848)", 5, nil, []string{"consumer"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := kmsg.NewPtrListGroupsRequest()
			req.Version, req.StatesFilter, req.TypesFilter = c.version, c.states, c.types
			var got []string
			for _, g := range e.c.ListGroups(req).Groups {
				got = append(got, g.Group)
			}
			assert.Equal(t, c.want, got)
		})
	}

	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{"busy", "idle", "never"}
	resp := e.c.DescribeGroups(req)
	require.Len(t, resp.Groups, 3)
	assert.Equal(t, "Stable", resp.Groups[0].State)
	assert.Equal(t, "range", resp.Groups[0].Protocol)
	assert.Equal(t, "consumer", resp.Groups[0].ProtocolType)
	require.Len(t, resp.Groups[0].Members, 1)
	assert.NotEmpty(t, resp.Groups[0].Members[0].MemberAssignment)
	assert.Equal(t, "Empty", resp.Groups[1].State)
	assert.Equal(t, "Dead", resp.Groups[2].State)
	assert.Zero(t, resp.Groups[2].ErrorCode)
}

func TestTopicDeletedDropsOffsets(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, []int16{0, 0}, commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 0, 1}, tpo{"t", 1, 2}))))
	e.c.TopicDeleted("t")
	assert.Equal(t, []int64{-1, -1}, e.fetch("s", 0, 1))
	e.restart()
	assert.Equal(t, []int64{-1, -1}, e.fetch("s", 0, 1))
}

func TestLeaveGroupVersions(t *testing.T) {
	e := newEnv(t)
	ids, _ := e.stable("g", 2)
	v0 := kmsg.NewPtrLeaveGroupRequest()
	v0.Group, v0.MemberID = "g", ids[1]
	assert.Zero(t, e.c.LeaveGroup(v0).ErrorCode)
	v0.MemberID = "gone"
	assert.Equal(t, kerr.UnknownMemberID.Code, e.c.LeaveGroup(v0).ErrorCode, "v0-2: the member's error is the top-level one")
	v0.Group = "no-such-group"
	assert.Equal(t, kerr.UnknownMemberID.Code, e.c.LeaveGroup(v0).ErrorCode)

	v3 := kmsg.NewPtrLeaveGroupRequest()
	v3.Version = 3
	v3.Group = "no-such-group"
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = "x"
	v3.Members = append(v3.Members, m)
	r := e.c.LeaveGroup(v3)
	assert.Zero(t, r.ErrorCode)
	require.Len(t, r.Members, 1)
	assert.Equal(t, kerr.UnknownMemberID.Code, r.Members[0].ErrorCode)
}

func TestOffsetFetchAllPartitions(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, []int16{0, 0, 0}, commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 2, 1}, tpo{"t", 0, 2}, tpo{"t", 1, 3}))))
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = "s" // Topics nil: everything
	resp := e.c.OffsetFetch(req)
	require.Len(t, resp.Topics, 1)
	var got []int64
	for _, p := range resp.Topics[0].Partitions {
		got = append(got, p.Offset)
		assert.Equal(t, int32(3), p.LeaderEpoch)
		assert.Equal(t, "md", *p.Metadata)
	}
	assert.Equal(t, []int64{2, 3, 1}, got, "sorted by partition")
}

func TestBadInputLeavesOtherGroupsServed(t *testing.T) {
	e := newEnv(t)
	ids, gen := e.stable("healthy", 2)
	huge := strings.Repeat("g", 100<<10)
	ctx := context.Background()
	cl := group.Client{ID: "bad"}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = huge
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = huge
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = huge
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 7
	fetch.Group = huge
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{huge}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{huge}
	invalid := kerr.InvalidGroupID.Code
	assert.Equal(t, invalid, e.c.JoinGroup(ctx, cl, joinReq(huge, "", 9, "", "s")).ErrorCode)
	assert.Equal(t, invalid, e.c.JoinGroup(ctx, cl, joinReq("", "", 9, "", "s")).ErrorCode)
	assert.Equal(t, invalid, e.c.Heartbeat(hb).ErrorCode)
	assert.Equal(t, invalid, e.c.SyncGroup(ctx, sync).ErrorCode)
	assert.Equal(t, invalid, e.c.LeaveGroup(leave).ErrorCode)
	assert.Equal(t, invalid, e.c.OffsetFetch(fetch).ErrorCode)
	assert.Equal(t, invalid, e.c.DescribeGroups(describe).Groups[0].ErrorCode)
	assert.Equal(t, invalid, e.c.DeleteGroups(ctx, del).Groups[0].ErrorCode)
	assert.Equal(t, []int16{invalid}, commitCodes(e.c.OffsetCommit(commitReq(huge, "", -1, tpo{"t", 0, 1}))))

	// Unknown group, member, generation; no protocol in common; oversized
	// metadata; a partition that does not exist; offset metadata too long.
	hb.Group, hb.MemberID = "nobody-here", "m"
	assert.Equal(t, kerr.UnknownMemberID.Code, e.c.Heartbeat(hb).ErrorCode)
	sync.Group = "nobody-here"
	assert.Equal(t, kerr.UnknownMemberID.Code, e.c.SyncGroup(ctx, sync).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, e.heartbeat("healthy", "stranger", gen))
	assert.Equal(t, kerr.IllegalGeneration.Code, e.heartbeat("healthy", ids[1], gen-1))
	other := joinReq("healthy", "", 9, "", "s")
	other.Protocols[0].Name = "roundrobin"
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, e.c.JoinGroup(ctx, cl, other).ErrorCode)
	big := joinReq("healthy", "", 9, "", strings.Repeat("x", group.DefaultMaxMetadataBytes))
	assert.Equal(t, kerr.InvalidRequest.Code, e.c.JoinGroup(ctx, cl, big).ErrorCode)
	noProto := joinReq("fresh", "", 9, "", "s")
	noProto.Protocols = nil
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, e.c.JoinGroup(ctx, cl, noProto).ErrorCode)
	shortSession := joinReq("fresh", "", 9, "", "s")
	shortSession.SessionTimeoutMillis = 10
	assert.Equal(t, kerr.InvalidSessionTimeout.Code, e.c.JoinGroup(ctx, cl, shortSession).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, e.c.JoinGroup(ctx, cl, joinReq("fresh", "invented", 9, "", "s")).ErrorCode)

	long := strings.Repeat("m", group.DefaultMaxOffsetMetadataBytes+1)
	mixed := commitReq("healthy", ids[0], gen, tpo{"t", 1, 5}, tpo{"t", 12, 5}, tpo{"nope", 0, 5}, tpo{"t", 0, 6})
	mixed.Topics[3].Partitions[0].Metadata = &long
	assert.Equal(t, []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.OffsetMetadataTooLarge.Code},
		commitCodes(e.c.OffsetCommit(mixed)))
	assert.Equal(t, []int16{kerr.IllegalGeneration.Code}, commitCodes(e.c.OffsetCommit(commitReq("nobody-here", "m", 3, tpo{"t", 0, 1}))))

	// Nothing corrupted: the healthy group is as it was, and no junk groups
	// were left behind by the failed requests.
	assert.Equal(t, map[string]string{"healthy": "Stable"}, e.listGroups())
	for _, id := range ids {
		assert.Zero(t, e.heartbeat("healthy", id, gen))
	}
	assert.Equal(t, []int64{-1, 5}, e.fetch("healthy", 0, 1))
}

func TestOffsetsExpireOnTheClock(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("old", "", -1, tpo{"t", 0, 9}))))
	e.clk.Advance(group.DefaultOffsetsRetention - time.Second)
	assert.Equal(t, []int64{9}, e.fetch("old", 0))
	e.clk.Advance(time.Second)
	require.Eventually(t, func() bool { return len(e.listGroups()) == 0 }, waitLimit, time.Millisecond, "the offsets expire")
	assert.Equal(t, []int64{-1}, e.fetch("old", 0))
	e.restart()
	assert.Equal(t, []int64{-1}, e.fetch("old", 0), "the expiry was stored")
	assert.Empty(t, e.listGroups())
}
