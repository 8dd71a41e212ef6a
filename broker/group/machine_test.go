package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestFirstMemberJoinsAfterInitialDelay(t *testing.T) {
	h := newHarness(t)
	w := h.join("")
	r := h.reply(w)
	assertCode(t, kerr.MemberIDRequired, r.Code)
	require.Equal(t, "m1", r.Join.MemberID)
	require.Equal(t, Empty, h.g.State(), "a MEMBER_ID_REQUIRED answer starts no rebalance")

	w = h.join("m1")
	require.True(t, h.parked(w))
	require.Equal(t, PreparingRebalance, h.g.State())
	h.advance(delay - time.Millisecond)
	require.True(t, h.parked(w), "answered before the initial rebalance delay")
	h.advance(time.Millisecond)
	r = h.reply(w)
	assertCode(t, nil, r.Code)
	assert.Equal(t, int32(1), r.Join.Generation)
	assert.Equal(t, "m1", r.Join.Leader)
	assert.Equal(t, "range", r.Join.Protocol)
	assert.Equal(t, "consumer", r.Join.ProtocolType)
	require.Len(t, r.Join.Members, 1)
	assert.Equal(t, []byte("sub"), r.Join.Members[0].Metadata)
	require.Equal(t, CompletingRebalance, h.g.State())

	s := h.sync("m1", 1, map[string][]byte{"m1": []byte("mine")})
	require.Len(t, h.stores, 1, "the assignment is stored before SyncGroup answers")
	assert.Equal(t, []byte("mine"), h.reply(s).Sync.Assignment)
	require.Equal(t, Stable, h.g.State())
	assertCode(t, nil, h.heartbeat("m1", 1))
}

func TestInitialDelayExtendsWithEachNewMember(t *testing.T) {
	h := newHarness(t)
	var ws []Waiter
	for range 10 {
		w, _ := h.newMember()
		ws = append(ws, w)
		h.advance(delay / 2) // each arrives before the delay ends
		require.True(t, h.parked(w))
	}
	h.advance(delay/2 - time.Millisecond)
	for _, w := range ws {
		require.True(t, h.parked(w), "the delay runs from the last new member")
	}
	h.advance(time.Millisecond)
	leaders := 0
	for _, w := range ws {
		r := h.reply(w)
		assertCode(t, nil, r.Code)
		assert.Equal(t, int32(1), r.Join.Generation, "all ten in the first generation")
		if r.Join.Members != nil {
			leaders++
			assert.Len(t, r.Join.Members, 10)
		}
	}
	assert.Equal(t, 1, leaders)
}

func TestInitialDelayCappedByRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	h.g.set.MaxMembers = 0
	start := h.now
	var ws []Waiter
	// New members every 200ms for longer than the rebalance timeout.
	for h.now.Sub(start) < rebal+time.Second {
		w, _ := h.newMember()
		ws = append(ws, w)
		h.advance(200 * time.Millisecond)
		if !h.parked(ws[0]) {
			break
		}
	}
	require.False(t, h.parked(ws[0]))
	require.LessOrEqual(t, h.now.Sub(start), rebal+200*time.Millisecond)
}

func TestJoinIntoStableGroupRebalances(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	w, newID := h.newMember()
	require.Equal(t, PreparingRebalance, h.g.State())
	require.True(t, h.parked(w))
	// No initial delay outside Empty: the others learn from heartbeats.
	assertCode(t, kerr.RebalanceInProgress, h.heartbeat(ids[0], 1))
	assertCode(t, kerr.RebalanceInProgress, h.heartbeat(ids[1], 1))
	w0 := h.join(ids[0])
	require.True(t, h.parked(w0))
	w1 := h.join(ids[1])
	for _, w := range []Waiter{w, w0, w1} {
		r := h.reply(w)
		assertCode(t, nil, r.Code)
		assert.Equal(t, int32(2), r.Join.Generation)
		assert.Equal(t, ids[0], r.Join.Leader, "the leader stays the leader")
	}
	assert.Len(t, h.reply(w0).Join.Members, 3)
	assert.Nil(t, h.reply(w).Join.Members)
	assertCode(t, nil, h.heartbeat(newID, 2))
	assertCode(t, kerr.IllegalGeneration, h.heartbeat(newID, 1))
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(3)
	w0 := h.join(ids[0], withMeta("changed"))
	require.Equal(t, PreparingRebalance, h.g.State())
	// ids[1] rejoins; ids[2] keeps heartbeating (its session stays alive)
	// but never rejoins, as a consumer stuck processing a poll would.
	w1 := h.join(ids[1])
	for range 5 {
		h.advance(rebal / 6)
		assertCode(t, kerr.RebalanceInProgress, h.heartbeat(ids[2], 1))
	}
	require.True(t, h.parked(w0))
	h.advance(rebal/6 - time.Millisecond)
	require.True(t, h.parked(w0))
	h.advance(time.Millisecond)
	r := h.reply(w0)
	assertCode(t, nil, r.Code)
	require.Len(t, r.Join.Members, 2)
	assertCode(t, nil, h.reply(w1).Code)
	assertCode(t, kerr.UnknownMemberID, h.heartbeat(ids[2], 2))
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	h.advance(session / 2)
	assertCode(t, nil, h.heartbeat(ids[0], 1))
	h.advance(session / 2)
	require.Equal(t, PreparingRebalance, h.g.State(), "ids[1] stopped heartbeating")
	assertCode(t, kerr.UnknownMemberID, h.heartbeat(ids[1], 1))
	w := h.join(ids[0])
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	require.Len(t, r.Join.Members, 1)
	assert.Equal(t, int32(2), r.Join.Generation)
}

func TestNextDeadlineDrivesTimers(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(1)
	require.Equal(t, h.now.Add(session), h.g.NextDeadline())
	h.advanceTo(h.now.Add(session))
	require.Equal(t, Empty, h.g.State(), "last member gone and no offsets: the group stays Empty, as Kafka keeps it")
	assertCode(t, kerr.UnknownMemberID, h.heartbeat(ids[0], 1))
	emptied := h.now
	h.g.set.OffsetsRetention = time.Hour
	require.Equal(t, emptied.Add(time.Hour), h.g.NextDeadline(), "the retention that forgets it")
	h.advanceTo(emptied.Add(time.Hour))
	require.Equal(t, Dead, h.g.State(), "nothing to keep once the retention passed")
	last := h.stores[len(h.stores)-1]
	require.Len(t, last.Records, 1)
	assert.Nil(t, last.Records[0].Value, "the stored metadata is tombstoned")
	assertCode(t, kerr.CoordinatorNotAvailable, h.heartbeat(ids[0], 1))
	assert.True(t, h.g.NextDeadline().IsZero())
}

func TestLastMemberLeavesGroupWithOffsets(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(1)
	tp := TopicPartition{"t", 0}
	h.g.CommitStarted([]TopicPartition{tp})
	h.g.CommitDone([]Commit{{TopicPartition: tp, Offset: Offset{Offset: 7}}}, 1, true)
	top, codes := h.g.Leave(h.now, []LeaveMember{{MemberID: ids[0]}})
	h.collect()
	assertCode(t, nil, top)
	assertCode(t, nil, codes[0])
	require.Equal(t, Empty, h.g.State())
	assert.Equal(t, int32(2), h.g.Generation(), "emptying ends a generation")
	last := h.stores[len(h.stores)-1]
	require.NotNil(t, last.Records[0].Value, "the empty group is stored, not deleted")
	o, ok := h.g.Committed(tp)
	require.True(t, ok)
	assert.Equal(t, int64(7), o.Offset)
}

func TestFencing(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	cases := []struct {
		name   string
		member string
		gen    int32
		want   *kerr.Error
	}{
		{"current", ids[1], 1, nil},
		{"stale generation", ids[1], 0, kerr.IllegalGeneration},
		{"future generation", ids[1], 2, kerr.IllegalGeneration},
		{"unknown member", "nobody", 1, kerr.UnknownMemberID},
		{"empty member id", "", 1, kerr.UnknownMemberID},
	}
	for _, c := range cases {
		t.Run("heartbeat/"+c.name, func(t *testing.T) {
			assertCode(t, c.want, h.heartbeat(c.member, c.gen))
		})
		t.Run("sync/"+c.name, func(t *testing.T) {
			r := h.reply(h.sync(c.member, c.gen, nil))
			assertCode(t, c.want, r.Code)
			if c.want == nil {
				assert.Equal(t, []byte("a-"+c.member), r.Sync.Assignment, "Stable: the current assignment")
			}
		})
		t.Run("commit/"+c.name, func(t *testing.T) {
			assertCode(t, c.want, h.g.CheckCommit(h.now, c.member, "", c.gen))
		})
	}
	require.Equal(t, Stable, h.g.State(), "no fenced request changed the group")
}

func TestSyncAndCommitDuringRebalance(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	h.join(ids[1], withMeta("new"))
	require.Equal(t, PreparingRebalance, h.g.State())
	assertCode(t, kerr.RebalanceInProgress, h.reply(h.sync(ids[0], 1, nil)).Code)
	assertCode(t, nil, h.g.CheckCommit(h.now, ids[0], "", 1))
	w := h.join(ids[0])
	require.False(t, h.parked(w))
	require.Equal(t, CompletingRebalance, h.g.State())
	assertCode(t, kerr.RebalanceInProgress, h.g.CheckCommit(h.now, ids[0], "", 2))
	assertCode(t, nil, h.heartbeat(ids[1], 2))
}

func TestFollowerRejoinWhileCompleting(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	h.join(ids[0])
	w1 := h.join(ids[1])
	require.Equal(t, CompletingRebalance, h.g.State())
	// The follower lost its answer and asks again with the same metadata.
	again := h.join(ids[1])
	r := h.reply(again)
	assertCode(t, nil, r.Code)
	assert.Equal(t, h.reply(w1).Join.Generation, r.Join.Generation)
	require.Equal(t, CompletingRebalance, h.g.State())
	// With new metadata it restarts the rebalance instead, and a parked
	// follower SyncGroup learns it.
	s := h.sync(ids[1], 2, nil)
	require.True(t, h.parked(s))
	h.join(ids[0], withMeta("new"))
	assertCode(t, kerr.RebalanceInProgress, h.reply(s).Code)
	require.Equal(t, PreparingRebalance, h.g.State())
}

func TestSyncTimeoutDropsLeaderThatNeverSyncs(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	h.join(ids[0])
	h.join(ids[1])
	s := h.sync(ids[1], 2, nil)
	// The leader keeps heartbeating but never sends SyncGroup.
	for range 5 {
		h.advance(rebal / 5)
		h.g.Heartbeat(h.now, ids[0], "", 2)
	}
	assertCode(t, kerr.RebalanceInProgress, h.reply(s).Code)
	assertCode(t, kerr.UnknownMemberID, h.heartbeat(ids[0], 2))
	w := h.join(ids[1])
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	assert.Equal(t, ids[1], r.Join.Leader)
}

func TestLeaderAssignmentFillsMissingMembers(t *testing.T) {
	h := newHarness(t)
	w0, id0 := h.newMember()
	w1, id1 := h.newMember()
	h.advance(delay)
	leader := h.reply(w0).Join.Leader
	require.Equal(t, id0, leader)
	s1 := h.sync(id1, 1, nil)
	s0 := h.sync(id0, 1, map[string][]byte{id0: []byte("x"), "ghost": []byte("y")})
	assert.Equal(t, []byte("x"), h.reply(s0).Sync.Assignment)
	assert.Equal(t, []byte{}, h.reply(s1).Sync.Assignment)
	_ = w1
}

func TestStoreFailureSendsGroupBackToRebalance(t *testing.T) {
	h := newHarness(t)
	w0, id0 := h.newMember()
	h.advance(delay)
	require.Zero(t, h.reply(w0).Code)
	h.failStores = true
	s := h.sync(id0, 1, map[string][]byte{id0: []byte("x")})
	assertCode(t, kerr.CoordinatorNotAvailable, h.reply(s).Code)
	require.Equal(t, PreparingRebalance, h.g.State())
	h.failStores = false
	w := h.join(id0)
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	assert.Equal(t, int32(2), r.Join.Generation)
}

func TestProtocolSelection(t *testing.T) {
	p := func(names ...string) joinOpt {
		var ps []Protocol
		for _, n := range names {
			ps = append(ps, Protocol{Name: n, Metadata: []byte(n)})
		}
		return withProtocols(ps...)
	}
	t.Run("vote", func(t *testing.T) {
		h := newHarness(t)
		wa, _ := h.newMember(p("range", "cooperative-sticky"))
		h.newMember(p("cooperative-sticky", "range"))
		h.newMember(p("cooperative-sticky", "roundrobin", "range"))
		h.advance(delay)
		r := h.reply(wa)
		assert.Equal(t, "cooperative-sticky", r.Join.Protocol)
		for _, m := range r.Join.Members {
			assert.Equal(t, []byte("cooperative-sticky"), m.Metadata, "the leader sees metadata for the chosen protocol")
		}
	})
	t.Run("nothing in common", func(t *testing.T) {
		h := newHarness(t)
		h.newMember(p("range"))
		r := h.reply(h.join("", p("roundrobin")))
		assertCode(t, kerr.InconsistentGroupProtocol, r.Code)
	})
	t.Run("other protocol type", func(t *testing.T) {
		h := newHarness(t)
		h.newMember()
		r := h.reply(h.join("", func(r *JoinRequest) { r.ProtocolType = "connect" }))
		assertCode(t, kerr.InconsistentGroupProtocol, r.Code)
	})
	t.Run("no protocols", func(t *testing.T) {
		h := newHarness(t)
		assertCode(t, kerr.InconsistentGroupProtocol, h.reply(h.join("", p())).Code)
	})
	t.Run("empty protocol type", func(t *testing.T) {
		h := newHarness(t)
		r := h.reply(h.join("", func(r *JoinRequest) { r.ProtocolType = "" }))
		assertCode(t, kerr.InconsistentGroupProtocol, r.Code)
	})
	t.Run("sync names another protocol", func(t *testing.T) {
		h := newHarness(t)
		ids := h.stable(1)
		w := h.waiter()
		h.g.Sync(h.now, SyncRequest{Waiter: w, MemberID: ids[0], Generation: 1, Protocol: "roundrobin"})
		h.collect()
		assertCode(t, kerr.InconsistentGroupProtocol, h.reply(w).Code)
	})
}

func TestJoinValidation(t *testing.T) {
	cases := []struct {
		name string
		opt  joinOpt
		want *kerr.Error
	}{
		{"session too short", withSession(time.Second - 1), kerr.InvalidSessionTimeout},
		{"session too long", withSession(time.Hour + 1), kerr.InvalidSessionTimeout},
		{"metadata too large", withMeta(string(make([]byte, 1025))), kerr.InvalidRequest},
		{"metadata at the limit", withMeta(string(make([]byte, 1024-len("range")))), kerr.MemberIDRequired},
		{"unknown member id", func(r *JoinRequest) { r.MemberID = "stranger" }, kerr.UnknownMemberID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ids := h.stable(1)
			r := h.reply(h.join("", c.opt))
			assertCode(t, c.want, r.Code)
			assert.Equal(t, Stable, h.g.State())
			assertCode(t, nil, h.heartbeat(ids[0], 1))
		})
	}
}

func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t)
	h.stable(9)
	_, id := h.newMember()
	require.NotEmpty(t, id)
	r := h.reply(h.join(""))
	assertCode(t, kerr.GroupMaxSizeReached, r.Code)
}

func TestOldJoinVersionAddsMemberAtOnce(t *testing.T) {
	h := newHarness(t)
	w := h.join("", oldVersion())
	require.True(t, h.parked(w), "no MEMBER_ID_REQUIRED before v4")
	h.advance(delay)
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	assert.Equal(t, "m1", r.Join.MemberID)
}

func TestPendingMemberHoldsRebalanceUntilItExpires(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(1)
	pending := h.reply(h.join(""))
	assertCode(t, kerr.MemberIDRequired, pending.Code)
	w := h.join(ids[0], withMeta("changed"))
	require.True(t, h.parked(w), "waits for the pending member")
	h.advance(session)
	require.False(t, h.parked(w), "the pending member id expired")
	assertCode(t, nil, h.reply(w).Code)
	r := h.reply(h.join(pending.Join.MemberID))
	assertCode(t, kerr.UnknownMemberID, r.Code)
}

func TestRetriedJoinSupersedesParkedOne(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	first := h.join(ids[0], withMeta("x"))
	second := h.join(ids[0], withMeta("x"))
	assertCode(t, kerr.RebalanceInProgress, h.reply(first).Code)
	require.True(t, h.parked(second))
	h.join(ids[1])
	assertCode(t, nil, h.reply(second).Code)
}

func TestShutdownAnswersParkedRequests(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	w := h.join(ids[0], withMeta("x"))
	require.True(t, h.parked(w))
	h.g.Shutdown(h.now, kerr.CoordinatorNotAvailable.Code)
	h.collect()
	assertCode(t, kerr.CoordinatorNotAvailable, h.reply(w).Code)
	require.Equal(t, Dead, h.g.State())
	assertCode(t, kerr.CoordinatorNotAvailable, h.reply(h.join(ids[1])).Code)
}
