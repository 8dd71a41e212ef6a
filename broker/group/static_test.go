package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// staticGroup forms a Stable group of static members "i0", "i1", ... and
// returns their member ids; the first is the leader.
func (h *harness) staticGroup(n int) []string {
	h.t.Helper()
	var ws []Waiter
	for i := range n {
		ws = append(ws, h.join("", withInstance(instance(i))))
	}
	h.advance(delay)
	var ids []string
	for _, w := range ws {
		r := h.reply(w)
		require.Zero(h.t, r.Code, "static members need no MEMBER_ID_REQUIRED round")
		ids = append(ids, r.Join.MemberID)
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("a-" + id)
	}
	for _, id := range ids[1:] {
		h.sync(id, 1, nil)
	}
	h.sync(ids[0], 1, assign)
	require.Equal(h.t, Stable, h.g.State())
	return ids
}

func instance(i int) string { return string(rune('0'+i)) + "-instance" }

func TestStaticMemberRestartKeepsAssignmentWithoutRebalance(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup(3)
	stores := len(h.stores)
	// The process behind i1 restarts: no LeaveGroup, a fresh JoinGroup with
	// no member id and the same instance id.
	w := h.join("", withInstance(instance(1)))
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	newID := r.Join.MemberID
	assert.NotEqual(t, ids[1], newID)
	assert.Equal(t, int32(1), r.Join.Generation, "same generation: no rebalance")
	assert.Equal(t, Stable, h.g.State())
	assert.Len(t, h.stores, stores+1, "the new member id is stored")
	s := h.reply(h.sync(newID, 1, nil))
	assertCode(t, nil, s.Code)
	assert.Equal(t, []byte("a-"+ids[1]), s.Sync.Assignment, "it keeps its partitions")

	// The old incarnation is fenced; the others never noticed.
	assertCode(t, kerr.FencedInstanceID, h.g.Heartbeat(h.now, ids[1], instance(1), 1))
	assertCode(t, kerr.UnknownMemberID, h.heartbeat(ids[1], 1))
	assertCode(t, kerr.FencedInstanceID, h.g.CheckCommit(h.now, ids[1], instance(1), 1))
	assertCode(t, nil, h.heartbeat(ids[0], 1))
	assertCode(t, nil, h.heartbeat(ids[2], 1))
	assertCode(t, nil, h.g.Heartbeat(h.now, newID, instance(1), 1))
	r = h.reply(h.join(ids[1], withInstance(instance(1))))
	assertCode(t, kerr.FencedInstanceID, r.Code)
}

func TestStaticLeaderRestart(t *testing.T) {
	t.Run("v9 skips assignment", func(t *testing.T) {
		h := newHarness(t)
		ids := h.staticGroup(2)
		r := h.reply(h.join("", withInstance(instance(0))))
		assertCode(t, nil, r.Code)
		assert.True(t, r.Join.SkipAssignment)
		assert.Equal(t, r.Join.MemberID, r.Join.Leader, "the new incarnation leads")
		assert.Len(t, r.Join.Members, 2)
		assert.Equal(t, Stable, h.g.State())
		assertCode(t, nil, h.heartbeat(ids[1], 1))
	})
	t.Run("before v9 rebalances", func(t *testing.T) {
		h := newHarness(t)
		ids := h.staticGroup(2)
		w := h.join("", withInstance(instance(0)), oldVersion())
		require.True(t, h.parked(w))
		assert.Equal(t, PreparingRebalance, h.g.State())
		assertCode(t, kerr.RebalanceInProgress, h.heartbeat(ids[1], 1))
		h.join(ids[1], withInstance(instance(1)))
		r := h.reply(w)
		assertCode(t, nil, r.Code)
		assert.Equal(t, int32(2), r.Join.Generation)
		assert.Equal(t, r.Join.MemberID, r.Join.Leader)
	})
}

func TestStaticRestartProtocolChange(t *testing.T) {
	both := func(first, second string) joinOpt {
		return withProtocols(Protocol{Name: first, Metadata: []byte(first)}, Protocol{Name: second, Metadata: []byte(second)})
	}
	t.Run("new metadata, same protocol: no rebalance", func(t *testing.T) {
		h := newHarness(t)
		h.staticGroup(2)
		// A cooperative member restarts owning nothing: its metadata
		// differs, which must not cost the group a rebalance.
		r := h.reply(h.join("", withInstance(instance(1)), withMeta("owns nothing now")))
		assertCode(t, nil, r.Code)
		assert.Equal(t, int32(1), r.Join.Generation)
		assert.Equal(t, Stable, h.g.State())
	})
	t.Run("vote changes: rebalance", func(t *testing.T) {
		h := newHarness(t)
		w := h.join("", withInstance(instance(0)), both("range", "sticky"))
		h.advance(delay)
		r := h.reply(w)
		require.Equal(t, "range", r.Join.Protocol)
		h.sync(r.Join.MemberID, 1, nil)
		require.Equal(t, Stable, h.g.State())
		r = h.reply(h.join("", withInstance(instance(0)), both("sticky", "range")))
		assertCode(t, nil, r.Code)
		assert.Equal(t, int32(2), r.Join.Generation, "a new generation")
		assert.Equal(t, "sticky", r.Join.Protocol)
	})
}

func TestStaticMemberReplacedWhileParked(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup(2)
	old := h.join(ids[1], withInstance(instance(1)), withMeta("changed"))
	require.True(t, h.parked(old))
	fresh := h.join("", withInstance(instance(1)))
	assertCode(t, kerr.FencedInstanceID, h.reply(old).Code)
	require.True(t, h.parked(fresh))
	h.join(ids[0], withInstance(instance(0)))
	assertCode(t, nil, h.reply(fresh).Code)
}

func TestStaticMemberNotRejoiningKeepsSlot(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup(2)
	w := h.join(ids[0], withInstance(instance(0)), withMeta("changed"))
	// i1 heartbeats (its session, shorter than the rebalance timeout, must
	// not run out) but does not rejoin.
	for range 5 {
		h.advance(rebal / 6)
		h.g.Heartbeat(h.now, ids[1], instance(1), 1)
	}
	h.advance(rebal / 6)
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	require.Len(t, r.Join.Members, 2, "the static member keeps its slot in the new generation")
	assert.Equal(t, instance(1), r.Join.Members[1].InstanceID)
}

func TestLeave(t *testing.T) {
	cases := []struct {
		name    string
		leaving func(ids []string) LeaveMember
		want    *kerr.Error
		removed int // index of the member that left, -1 for none
	}{
		{"by member id", func(ids []string) LeaveMember { return LeaveMember{MemberID: ids[1]} }, nil, 1},
		{"by instance id only", func([]string) LeaveMember { return LeaveMember{InstanceID: instance(1)} }, nil, 1},
		{"by both", func(ids []string) LeaveMember { return LeaveMember{MemberID: ids[0], InstanceID: instance(0)} }, nil, 0},
		{"instance of another member", func(ids []string) LeaveMember {
			return LeaveMember{MemberID: ids[0], InstanceID: instance(1)}
		}, kerr.FencedInstanceID, -1},
		{"unknown instance", func([]string) LeaveMember { return LeaveMember{InstanceID: "nope"} }, kerr.UnknownMemberID, -1},
		{"unknown member", func([]string) LeaveMember { return LeaveMember{MemberID: "nope"} }, kerr.UnknownMemberID, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ids := h.staticGroup(2)
			top, codes := h.g.Leave(h.now, []LeaveMember{c.leaving(ids)})
			h.collect()
			assertCode(t, nil, top)
			assertCode(t, c.want, codes[0])
			if c.removed < 0 {
				assert.Equal(t, Stable, h.g.State())
				return
			}
			assert.Equal(t, PreparingRebalance, h.g.State())
			other := ids[1-c.removed]
			w := h.join(other, withInstance(instance(1-c.removed)))
			r := h.reply(w)
			assertCode(t, nil, r.Code)
			assert.Len(t, r.Join.Members, 1)
			assert.Equal(t, other, r.Join.Leader)
		})
	}
}

func TestLeaveSeveralAndPending(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(3)
	pending := h.reply(h.join("")).Join.MemberID
	top, codes := h.g.Leave(h.now, []LeaveMember{{MemberID: ids[1]}, {MemberID: pending}, {MemberID: ids[2]}, {MemberID: ids[2]}})
	h.collect()
	assertCode(t, nil, top)
	assert.Equal(t, []int16{0, 0, 0, kerr.UnknownMemberID.Code}, codes)
	w := h.join(ids[0])
	r := h.reply(w)
	assertCode(t, nil, r.Code)
	assert.Len(t, r.Join.Members, 1)
}

func TestLeaveWhileParkedAnswersWaiters(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	w0 := h.join(ids[0], withMeta("x"))
	require.True(t, h.parked(w0))
	_, codes := h.g.Leave(h.now, []LeaveMember{{MemberID: ids[0]}})
	h.collect()
	assertCode(t, nil, codes[0])
	assertCode(t, kerr.UnknownMemberID, h.reply(w0).Code)
	w1 := h.join(ids[1])
	assertCode(t, nil, h.reply(w1).Code)
}
