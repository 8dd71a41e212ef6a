package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCheckCommitWithoutMembership(t *testing.T) {
	h := newHarness(t)
	assertCode(t, nil, h.g.CheckCommit(h.now, "", "", -1)) // an Empty group takes commits from anyone
	h.stable(1)
	assertCode(t, kerr.UnknownMemberID, h.g.CheckCommit(h.now, "", "", -1)) // not once it has members
	assertCode(t, kerr.UnknownMemberID, h.g.CheckCommit(h.now, "", "", 1))
	h.g.Shutdown(h.now, 0)
	assertCode(t, kerr.CoordinatorNotAvailable, h.g.CheckCommit(h.now, "", "", -1))
}

func TestCommitCountsAsHeartbeat(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(1)
	for range 4 {
		h.advance(session / 2)
		assertCode(t, nil, h.g.CheckCommit(h.now, ids[0], "", 1))
	}
	assert.Equal(t, Stable, h.g.State())
}

func TestCommitsApplyInLogOrder(t *testing.T) {
	g := NewGroup("g", testSettings(), t0)
	tp := TopicPartition{"t", 0}
	c := func(o int64) []Commit { return []Commit{{TopicPartition: tp, Offset: Offset{Offset: o}}} }
	g.CommitStarted([]TopicPartition{tp})
	g.CommitStarted([]TopicPartition{tp})
	g.CommitStarted([]TopicPartition{tp})
	// Durable out of order: the later record (pos 20) lands first.
	g.CommitDone(c(200), 20, true)
	g.CommitDone(c(100), 10, true)
	o, _ := g.Committed(tp)
	assert.Equal(t, int64(200), o.Offset)
	g.CommitDone(c(300), 30, false)
	o, _ = g.Committed(tp)
	assert.Equal(t, int64(200), o.Offset, "a commit that never became durable is not visible")
	assert.Empty(t, g.inflight)
}

func TestDelete(t *testing.T) {
	t.Run("with members", func(t *testing.T) {
		h := newHarness(t)
		h.stable(1)
		w := h.waiter()
		h.g.Delete(h.now, w)
		h.collect()
		assertCode(t, kerr.NonEmptyGroup, h.reply(w).Code)
		assert.Equal(t, Stable, h.g.State())
	})
	t.Run("empty", func(t *testing.T) {
		h := newHarness(t)
		done := TopicPartition{"t", 0}
		flying := TopicPartition{"t", 1}
		h.g.CommitStarted([]TopicPartition{done, flying})
		h.g.CommitDone([]Commit{{TopicPartition: done, Offset: Offset{Offset: 1}}}, 1, true)
		w := h.waiter()
		h.g.Delete(h.now, w)
		h.collect()
		assertCode(t, nil, h.reply(w).Code)
		assert.Equal(t, Dead, h.g.State())
		require.Len(t, h.stores, 1)
		var keys []any
		for _, r := range h.stores[0].Records {
			require.Nil(t, r.Value)
			keys = append(keys, decodeKey(t, r.Key))
		}
		assert.Equal(t, []any{
			kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 0},
			kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 1},
			kmsg.GroupMetadataKey{Version: 2, Group: "g"},
		}, keys, "in-flight commits are tombstoned too")
		// The in-flight commit lands after the delete: not resurrected.
		h.g.CommitDone([]Commit{{TopicPartition: flying, Offset: Offset{Offset: 2}}}, 2, true)
		_, ok := h.g.Committed(flying)
		assert.False(t, ok)

		w = h.waiter()
		h.g.Delete(h.now, w)
		h.collect()
		assertCode(t, kerr.GroupIDNotFound, h.reply(w).Code)
	})
}

func decodeKey(t *testing.T, key []byte) any {
	t.Helper()
	if key[1] == 2 {
		var k kmsg.GroupMetadataKey
		require.NoError(t, k.ReadFrom(key))
		return k
	}
	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(key))
	return k
}

func TestDropTopic(t *testing.T) {
	h := newHarness(t)
	var commits []Commit
	var tps []TopicPartition
	for _, tp := range []TopicPartition{{"a", 0}, {"b", 0}, {"b", 1}} {
		tps = append(tps, tp)
		commits = append(commits, Commit{TopicPartition: tp, Offset: Offset{Offset: 5}})
	}
	h.g.CommitStarted(tps)
	h.g.CommitDone(commits, 1, true)
	h.g.DropTopic("b")
	h.collect()
	all := h.g.AllCommitted()
	require.Len(t, all, 1)
	assert.Equal(t, "a", all[0].Topic)
	require.Len(t, h.stores, 1)
	assert.Len(t, h.stores[0].Records, 2)
}

func TestDescribeShowsAssignmentOnlyWhenStable(t *testing.T) {
	h := newHarness(t)
	ids := h.stable(2)
	d := h.g.Describe()
	assert.Equal(t, Stable, d.State)
	assert.Equal(t, "range", d.Protocol)
	require.Len(t, d.Members, 2)
	assert.Equal(t, []byte("a-"+ids[1]), d.Members[1].Assignment)
	assert.Equal(t, []byte("sub"), d.Members[1].Metadata)
	h.join(ids[1], withMeta("x"))
	d = h.g.Describe()
	assert.Equal(t, PreparingRebalance, d.State)
	assert.Nil(t, d.Members[1].Assignment)
}

func TestStateNames(t *testing.T) {
	for s := Empty; s <= Dead; s++ {
		got, ok := ParseState(s.String())
		require.True(t, ok)
		assert.Equal(t, s, got)
	}
	_, ok := ParseState("Sleeping")
	assert.False(t, ok)
	assert.Equal(t, "Unknown", State(42).String())
}

func TestOffsetsExpireInEmptyGroups(t *testing.T) {
	const retention = 24 * time.Hour
	tp := TopicPartition{"t", 0}
	commit := func(h *harness, off int64) {
		h.g.CommitStarted([]TopicPartition{tp})
		h.g.CommitDone([]Commit{{TopicPartition: tp, Offset: Offset{Offset: off, CommitTime: h.now}}}, off, true)
		h.collect()
	}
	t.Run("a group that only commits", func(t *testing.T) {
		h := newHarness(t)
		h.g.set.OffsetsRetention = retention
		commit(h, 1)
		h.advance(time.Hour)
		commit(h, 2) // a later commit restarts the clock
		assert.Equal(t, h.now.Add(retention), h.g.NextDeadline())
		h.advanceTo(h.now.Add(retention - time.Millisecond))
		_, ok := h.g.Committed(tp)
		require.True(t, ok)
		h.advanceTo(h.now.Add(time.Millisecond))
		_, ok = h.g.Committed(tp)
		require.False(t, ok, "expired")
		last := h.stores[len(h.stores)-1]
		require.Len(t, last.Records, 1)
		assert.Nil(t, last.Records[0].Value, "tombstoned")
		assert.True(t, h.g.Disposable(), "nothing left to keep")
	})
	t.Run("a consumer group counts from when it emptied", func(t *testing.T) {
		h := newHarness(t)
		h.g.set.OffsetsRetention = retention
		ids := h.stable(1)
		commit(h, 5)
		for range 12 {
			h.advance(session / 2)
			require.Zero(t, h.heartbeat(ids[0], 1))
		}
		emptied := h.now
		h.g.Leave(h.now, []LeaveMember{{MemberID: ids[0]}})
		h.collect()
		require.Equal(t, Empty, h.g.State())
		assert.Equal(t, emptied.Add(retention), h.g.NextDeadline())
		h.advanceTo(emptied.Add(retention))
		_, ok := h.g.Committed(tp)
		require.False(t, ok)
		assert.Equal(t, Dead, h.g.State(), "its stored metadata is tombstoned too")
	})
	t.Run("an Empty group without offsets stays until the retention passes", func(t *testing.T) {
		h := newHarness(t)
		h.g.set.OffsetsRetention = retention
		ids := h.stable(1)
		emptied := h.now
		h.g.Leave(h.now, []LeaveMember{{MemberID: ids[0]}})
		h.collect()
		require.Equal(t, Empty, h.g.State(), "listed, describable and deletable, as Kafka keeps it")
		h.advance(retention / 2)
		require.Equal(t, Empty, h.g.State())
		assert.Equal(t, emptied.Add(retention), h.g.NextDeadline())
		h.advanceTo(emptied.Add(retention))
		assert.Equal(t, Dead, h.g.State(), "forgotten once offsets.retention after it emptied has passed")
	})
	t.Run("never while it has members", func(t *testing.T) {
		h := newHarness(t)
		h.g.set.OffsetsRetention = retention
		ids := h.stable(1)
		commit(h, 5)
		for range 4 {
			h.advance(session / 2)
			require.Zero(t, h.heartbeat(ids[0], 1))
		}
		h.g.Tick(h.now.Add(2 * retention))
		_, ok := h.g.Committed(tp)
		assert.True(t, ok)
	})
}
