package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// newTestLeader is broker 1 leading epoch 5 of replicas 1, 2, 3 (broker
// epochs 11, 12, 13): epoch 3 wrote offsets 0-9, durable, HW 4, so epoch 5
// starts at 10. MinISR 2, LagTime 100 ms.
func newTestLeader(t *testing.T, mod func(*LeaderConfig)) (*Leader, []Action) {
	t.Helper()
	cfg := LeaderConfig{
		Self: 1, BrokerEpoch: 11, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
		LeaderEpoch: 5, PartitionEpoch: 7, MinISR: 2, LagTime: 100 * time.Millisecond,
		LogEnd: 10, DurableEnd: 10, HW: 4, Epochs: cache(t, 3, 0),
		Eligible: []ISRMember{{1, 11}, {2, 12}, {3, 13}},
		Now:      at(0),
	}
	if mod != nil {
		mod(&cfg)
	}
	l, acts, err := NewLeader(cfg)
	require.NoError(t, err)
	return l, acts
}

func fetchOf(replica int32, offset int64, lastEpoch int32, ms int) FollowerFetch {
	return FollowerFetch{Replica: replica, BrokerEpoch: 10 + int64(replica), CurrentLeaderEpoch: 5,
		FetchOffset: offset, LastFetchedEpoch: lastEpoch, Now: at(ms)}
}

func answerOf(t *testing.T, acts []Action) FetchAnswer {
	t.Helper()
	require.NotEmpty(t, acts)
	a, ok := acts[0].(FetchAnswer)
	require.True(t, ok, "first action %T", acts[0])
	return a
}

func find[T Action](acts []Action) (T, bool) {
	for _, a := range acts {
		if v, ok := a.(T); ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}

func TestNewLeader(t *testing.T) {
	l, acts := newTestLeader(t, nil)
	require.Equal(t, []Action{SaveEpochs{}}, acts, "the new epoch is assigned at the log end")
	require.Equal(t, entries(3, 0, 5, 10), l.epochs.Entries())
	s := l.Status(at(0))
	require.Equal(t, int64(10), s.EpochStart)
	require.Equal(t, int64(4), s.HW, "the HW waits for the ISR's followers")

	// Alone in the ISR with MinISR 1, the HW is the leader's durable end.
	_, acts = newTestLeader(t, func(c *LeaderConfig) { c.ISR, c.MinISR = []int32{1}, 1 })
	require.Equal(t, []Action{SaveEpochs{}, AdvanceHW{To: 10}}, acts)

	for name, mod := range map[string]func(*LeaderConfig){
		"no cache":        func(c *LeaderConfig) { c.Epochs = nil },
		"not in the ISR":  func(c *LeaderConfig) { c.ISR = []int32{2, 3} },
		"not a replica":   func(c *LeaderConfig) { c.Self = 4 },
		"durable past":    func(c *LeaderConfig) { c.DurableEnd = 11 },
		"later epoch":     func(c *LeaderConfig) { c.Epochs = cache(t, 6, 0) },
		"ISR non-replica": func(c *LeaderConfig) { c.ISR = []int32{1, 4} },
		"repeated":        func(c *LeaderConfig) { c.Replicas = []int32{1, 2, 2} },
	} {
		cfg := LeaderConfig{Self: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, LeaderEpoch: 5, LogEnd: 10, DurableEnd: 10, Epochs: cache(t)}
		mod(&cfg)
		_, _, err := NewLeader(cfg)
		require.Error(t, err, name)
	}
}

func TestLeaderFetchAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fetch     FollowerFetch
		err       error
		diverging *EpochEnd
		from, to  int64
	}{
		{"served up to the durable end, past the HW", fetchOf(2, 6, 3, 1), nil, nil, 6, 10},
		{"at the end: nothing yet", fetchOf(2, 10, 5, 1), nil, nil, 10, 10},
		{"not a replica", fetchOf(4, 6, 3, 1), kerr.NotLeaderForPartition, nil, 0, 0},
		{"older leader epoch: fenced", func() FollowerFetch { f := fetchOf(2, 6, 3, 1); f.CurrentLeaderEpoch = 4; return f }(), kerr.FencedLeaderEpoch, nil, 0, 0},
		{"newer leader epoch: unknown", func() FollowerFetch { f := fetchOf(2, 6, 3, 1); f.CurrentLeaderEpoch = 6; return f }(), kerr.UnknownLeaderEpoch, nil, 0, 0},
		{"no leader epoch: not checked", func() FollowerFetch { f := fetchOf(2, 6, 3, 1); f.CurrentLeaderEpoch = -1; return f }(), nil, nil, 6, 10},
		{"broker epoch older than registered (KIP-903)", func() FollowerFetch { f := fetchOf(2, 6, 3, 1); f.BrokerEpoch = 9; return f }(), kerr.NotLeaderForPartition, nil, 0, 0},
		// KIP-320: epoch 3 ends at 10 here; a follower past that in epoch 3
		// has records this log lacks.
		{"past the end of its last epoch", fetchOf(2, 12, 3, 1), nil, &EpochEnd{3, 10}, 0, 0},
		{"an epoch this log never had", fetchOf(2, 8, 4, 1), nil, &EpochEnd{3, 10}, 0, 0},
		{"an epoch above the leader's", fetchOf(2, 8, 6, 1), nil, &EpochEnd{5, 10}, 0, 0},
		{"below every epoch, past where history begins", func() FollowerFetch { return fetchOf(2, 3, 1, 1) }(), nil, &EpochEnd{1, 0}, 0, 0},
		{"no epoch, past the end", fetchOf(2, 11, -1, 1), kerr.OffsetOutOfRange, nil, 0, 0},
		{"no epoch, within the log", fetchOf(2, 0, -1, 1), nil, nil, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLeader(t, nil)
			a := answerOf(t, l.Step(tc.fetch))
			require.Equal(t, tc.fetch.Replica, a.Replica)
			if tc.err != nil {
				require.True(t, errors.Is(a.Err, tc.err), "got %v", a.Err)
				return
			}
			require.NoError(t, a.Err)
			require.Equal(t, tc.diverging, a.Diverging)
			if tc.diverging == nil {
				require.Equal(t, tc.from, a.From)
				require.Equal(t, tc.to, a.To)
			} else {
				require.Equal(t, int64(-1), l.follower(tc.fetch.Replica).fetchOffset, "a diverging position is not recorded")
			}
		})
	}
	t.Run("below the log start", func(t *testing.T) {
		l, _ := newTestLeader(t, func(c *LeaderConfig) { c.LogStart, c.HW = 5, 5 })
		a := answerOf(t, l.Step(fetchOf(2, 3, 3, 1)))
		require.True(t, errors.Is(a.Err, kerr.OffsetOutOfRange), "%v", a.Err)
		require.Equal(t, int64(5), a.LogStartOffset)
	})
	t.Run("a fetch older than the follower's last incarnation", func(t *testing.T) {
		l, _ := newTestLeader(t, func(c *LeaderConfig) { c.Eligible = nil })
		f := fetchOf(2, 6, 3, 1)
		f.BrokerEpoch = 20
		require.NoError(t, answerOf(t, l.Step(f)).Err)
		f.BrokerEpoch, f.FetchOffset = 12, 9
		require.True(t, errors.Is(answerOf(t, l.Step(f)).Err, kerr.NotLeaderForPartition))
		require.Equal(t, int64(6), l.follower(2).fetchOffset)
	})
}

func TestLeaderHighWatermark(t *testing.T) {
	l, _ := newTestLeader(t, nil)
	acts := l.Step(fetchOf(2, 8, 3, 1))
	_, moved := find[AdvanceHW](acts)
	require.False(t, moved, "follower 3 has not fetched: it holds the HW")
	acts = l.Step(fetchOf(3, 6, 3, 2))
	require.Equal(t, AdvanceHW{To: 6}, acts[1])
	require.Equal(t, int64(6), answerOf(t, acts).HighWatermark, "the answer carries the new HW")

	// The leader's durable end bounds it, not what it serves.
	l.Step(LocalAppended{End: 15})
	l.Step(fetchOf(2, 10, 3, 3))
	acts = l.Step(fetchOf(3, 10, 3, 4))
	require.Equal(t, AdvanceHW{To: 10}, acts[1])
	l.Step(fetchOf(2, 10, 5, 5))
	require.Empty(t, l.Step(LocalDurable{End: 12}), "followers at 10 hold it")
	require.Equal(t, int64(15), answerOf(t, l.Step(fetchOf(2, 12, 5, 6))).To, "served up to the log end, synced or not")
	require.Equal(t, []Action{AdvanceHW{To: 12}}, l.Step(fetchOf(3, 12, 5, 7))[1:])

	// Never back: a follower that truncated fetches lower.
	acts = l.Step(fetchOf(2, 11, 5, 8))
	require.Len(t, acts, 1)
	require.Equal(t, int64(12), l.HW())
}

func TestLeaderHWFrozenBelowMinISR(t *testing.T) {
	// KIP-966: with the committed ISR {1} below MinISR 2 the HW stays.
	l, _ := newTestLeader(t, func(c *LeaderConfig) { c.ISR = []int32{1} })
	require.True(t, l.Status(at(0)).UnderMinISR)
	require.Empty(t, l.Step(LocalDurable{End: 10}))
	require.True(t, errors.Is(l.CheckProduce(-1), kerr.NotEnoughReplicas))
	require.NoError(t, l.CheckProduce(1))
	require.True(t, errors.Is(l.AfterAppendCheck(), kerr.NotEnoughReplicasAfterAppend))

	// Follower 2 catches up: proposed, it counts (maximal ISR) but the
	// committed ISR is still below MinISR.
	acts := l.Step(fetchOf(2, 10, 5, 1))
	p, ok := find[ProposeISR](acts)
	require.True(t, ok)
	require.Equal(t, []ISRMember{{1, 11}, {2, 12}}, p.NewISR)
	_, moved := find[AdvanceHW](acts)
	require.False(t, moved)
	require.NoError(t, l.AfterAppendCheck(), "the maximal ISR has two")
	acts = l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}, Now: at(2)})
	require.Equal(t, []Action{AdvanceHW{To: 10}}, acts)
	require.NoError(t, l.CheckProduce(-1))
}

func TestLeaderCaughtUpAndShrink(t *testing.T) {
	l, _ := newTestLeader(t, func(c *LeaderConfig) { c.HW = 10 })
	l.Step(fetchOf(2, 10, 5, 10))
	l.Step(fetchOf(3, 10, 5, 10))
	l.Step(LocalAppended{End: 20})
	l.Step(LocalDurable{End: 20})

	// Follower 2 fetches at 10 (the end at its previous fetch): caught up
	// as of that previous fetch (10 ms), then at 20 (the end): now.
	l.Step(fetchOf(2, 10, 5, 50))
	require.Equal(t, at(10), l.follower(2).lastCaughtUp)
	l.Step(fetchOf(2, 20, 5, 90))
	require.Equal(t, at(90), l.follower(2).lastCaughtUp)
	// Follower 3 does not fetch again.
	require.Empty(t, l.Step(Tick{Now: at(110)}), "within LagTime of 10 ms")
	require.Equal(t, at(110).Add(1), l.NextDeadline())
	acts := l.Step(Tick{Now: at(111)})
	require.Len(t, acts, 1)
	p := acts[0].(ProposeISR)
	require.Equal(t, []ISRMember{{1, 11}, {2, 12}}, p.NewISR, "3 lags; the leader never goes")
	require.Equal(t, int32(5), p.LeaderEpoch)
	require.Equal(t, int32(7), p.PartitionEpoch)
	// The lagger still holds the HW until its removal commits.
	_, moved := find[AdvanceHW](l.Step(fetchOf(2, 20, 5, 112)))
	require.False(t, moved)
	acts = l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}, Now: at(113)})
	require.Equal(t, []Action{AdvanceHW{To: 20}}, acts)
	require.Equal(t, []int32{1, 2}, l.ISR())

	// An idle partition does not shrink a follower at the end.
	require.Empty(t, l.Step(Tick{Now: at(10_000)}))
}

func TestLeaderExpansion(t *testing.T) {
	isr12 := func(c *LeaderConfig) { c.ISR = []int32{1, 2} }
	for _, tc := range []struct {
		name   string
		mod    func(*LeaderConfig)
		fetch  FollowerFetch
		expect []ISRMember // nil: no proposal
	}{
		// 2 has not fetched in this epoch: its broker epoch is unknown (-1).
		{"caught up within this epoch", isr12, fetchOf(3, 10, 3, 1), []ISRMember{{1, 11}, {2, -1}, {3, 13}}},
		// KAFKA-7128: 8 >= HW 4, but the previous epoch's records up to 10
		// may have been acknowledged.
		{"at the HW but before the epoch start", isr12, fetchOf(3, 8, 3, 1), nil},
		{"fenced or shutting down (KIP-841)", func(c *LeaderConfig) { isr12(c); c.Eligible = c.Eligible[:2] }, fetchOf(3, 10, 3, 1), nil},
		{"fetched with another broker epoch (KIP-903)", func(c *LeaderConfig) { isr12(c); c.Eligible[2].BrokerEpoch = 14 }, fetchOf(3, 10, 3, 1), nil},
		{"without a broker epoch", isr12, func() FollowerFetch { f := fetchOf(3, 10, 3, 1); f.BrokerEpoch = -1; return f }(), []ISRMember{{1, 11}, {2, -1}, {3, -1}}},
		{"already in the ISR", nil, fetchOf(3, 10, 3, 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLeader(t, tc.mod)
			p, ok := find[ProposeISR](l.Step(tc.fetch))
			if tc.expect == nil {
				require.False(t, ok, "%v", p)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.expect, p.NewISR)
		})
	}
}

func TestLeaderOneProposalInFlight(t *testing.T) {
	setup := func(t *testing.T) (*Leader, ProposeISR) {
		l, _ := newTestLeader(t, func(c *LeaderConfig) { c.ISR = []int32{1} })
		p, ok := find[ProposeISR](l.Step(fetchOf(2, 10, 5, 1)))
		require.True(t, ok)
		return l, p
	}
	t.Run("blocks further proposals", func(t *testing.T) {
		l, _ := setup(t)
		_, ok := find[ProposeISR](l.Step(fetchOf(3, 10, 5, 2)))
		require.False(t, ok)
		require.Empty(t, l.Step(Tick{Now: at(1000)}))
	})
	t.Run("a success commits, and the next change comes with the next fetch", func(t *testing.T) {
		l, p := setup(t)
		l.Step(fetchOf(3, 10, 5, 2))
		acts := l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}, Now: at(3)})
		require.Equal(t, []Action{AdvanceHW{To: 10}}, acts)
		next, ok := find[ProposeISR](l.Step(fetchOf(3, 10, 5, 4)))
		require.True(t, ok)
		require.Equal(t, []ISRMember{{1, 11}, {2, 12}, {3, 13}}, next.NewISR)
		require.Equal(t, int32(8), next.PartitionEpoch)
		require.Greater(t, next.Seq, p.Seq)
	})
	t.Run("a stale answer is ignored", func(t *testing.T) {
		l, p := setup(t)
		require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq - 1, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 3}}))
		require.Equal(t, []int32{1}, l.ISR())
		require.NotNil(t, l.Status(at(0)).Pending)
	})
	t.Run("a refused one is dropped but still counts until metadata", func(t *testing.T) {
		for _, err := range []error{kerr.InvalidUpdateVersion, kerr.FencedLeaderEpoch, kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition} {
			l, p := setup(t)
			require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, Err: err, Now: at(2)}))
			s := l.Status(at(2))
			require.True(t, s.PendingRefused, "%v", err)
			require.Equal(t, []int32{1, 2}, s.MaximalISR, "an earlier attempt may have been applied")
			require.Empty(t, l.Step(Tick{Now: at(10_000)}), "never resent")
			_, ok := find[ProposeISR](l.Step(fetchOf(3, 10, 5, 3)))
			require.False(t, ok, "nothing proposed while unsettled")
			// The metadata settles it: whatever was committed.
			l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1}, Eligible: l.eligible, Now: at(4)})
			require.False(t, l.Status(at(4)).PendingRefused)
			p2, ok := find[ProposeISR](l.Step(fetchOf(3, 10, 5, 5)))
			require.True(t, ok, "%v", err)
			require.Equal(t, int32(9), p2.PartitionEpoch)
		}
	})
	t.Run("ineligible: back to the committed ISR", func(t *testing.T) {
		l, p := setup(t)
		require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, Err: kerr.IneligibleReplica, Now: at(2)}))
		s := l.Status(at(2))
		require.Nil(t, s.Pending)
		require.Equal(t, []int32{1}, s.MaximalISR)
		_, ok := find[ProposeISR](l.Step(fetchOf(2, 10, 5, 3)))
		require.False(t, ok, "no expansion until the metadata is refreshed")
		require.Empty(t, l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 7, ISR: []int32{1}, Eligible: l.eligible, Now: at(4)}))
		_, ok = find[ProposeISR](l.Step(fetchOf(2, 10, 5, 5)))
		require.True(t, ok)
	})
	t.Run("ineligible: a member fetching with another broker epoch is proposed again", func(t *testing.T) {
		// The proposal carries 2@12; replica 2 registers again (epoch 20,
		// and this leader's metadata says so) before the controller
		// answers a retry of it: ineligible. No newer metadata comes;
		// replica 2's next fetch, with 20, is a new proposal.
		l, p := setup(t)
		eligible := []ISRMember{{1, 11}, {2, 20}, {3, 13}}
		require.Empty(t, l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 7, ISR: []int32{1}, Eligible: eligible, Now: at(2)}))
		fetch := fetchOf(2, 10, 5, 3)
		fetch.BrokerEpoch = 20
		_, ok := find[ProposeISR](l.Step(fetch))
		require.False(t, ok, "one proposal at a time")
		require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, Err: kerr.IneligibleReplica, Now: at(4)}))
		fetch.Now = at(5)
		next, ok := find[ProposeISR](l.Step(fetch))
		require.True(t, ok, "not the proposal refused")
		require.Equal(t, []ISRMember{{1, 11}, {2, 20}}, next.NewISR)
		fetch.Now = at(6)
		require.Empty(t, l.Step(AlterPartitionResult{Seq: next.Seq, Err: kerr.IneligibleReplica, Now: at(6)}))
		_, ok = find[ProposeISR](l.Step(fetch))
		require.False(t, ok, "the same proposal is held until the metadata is refreshed")
	})
	t.Run("retriable: resent after the backoff", func(t *testing.T) {
		for _, err := range []error{kerr.RequestTimedOut, kerr.NotController, errors.New("connection reset")} {
			l, p := setup(t)
			require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, Err: err, Now: at(2)}))
			require.Equal(t, at(2).Add(DefaultRetryBackoff), l.NextDeadline())
			require.Empty(t, l.Step(Tick{Now: at(50)}))
			require.Equal(t, []Action{p}, l.Step(Tick{Now: at(102)}), "the same proposal, Seq included")
			require.Empty(t, l.Step(Tick{Now: at(300)}), "once")
		}
	})
	t.Run("a success for another leader epoch settles nothing", func(t *testing.T) {
		l, p := setup(t)
		require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 6, PartitionEpoch: 8, ISR: []int32{1, 2}}))
		require.True(t, l.Status(at(0)).PendingRefused)
	})
	t.Run("newer metadata ends the change in flight", func(t *testing.T) {
		l, p := setup(t)
		l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}, Eligible: l.eligible, Now: at(2)})
		require.Nil(t, l.Status(at(2)).Pending)
		require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}}))
		require.Empty(t, l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 7, ISR: []int32{1}}), "older: ignored")
		require.Equal(t, []int32{1, 2}, l.ISR())
	})
}

func TestLeaderStatus(t *testing.T) {
	l, _ := newTestLeader(t, func(c *LeaderConfig) { c.ISR = []int32{1, 2} })
	l.Step(fetchOf(2, 7, 3, 30))
	s := l.Status(at(100))
	require.True(t, s.UnderReplicated)
	require.False(t, s.UnderMinISR)
	require.Equal(t, []FollowerProgress{
		{ID: 2, BrokerEpoch: 12, FetchOffset: 7, LogStart: 0, InISR: true, LagOffsets: 3, TimeLag: 100 * time.Millisecond, LastFetch: at(30), LastCaughtUp: at(0)},
		{ID: 3, BrokerEpoch: -1, FetchOffset: -1, LogStart: -1, LagOffsets: 10, TimeLag: at(100).Sub(time.Time{})},
	}, s.Followers)
	require.Equal(t, int64(0), s.LowWatermark, "3, outside the ISR, does not hold it")
}

// TestLeaderLowWatermark: DeleteRecords' condition, the lowest log start
// over the maximal ISR, follows the followers' fetches and the ISR's
// changes; a follower outside the ISR does not hold it.
func TestLeaderLowWatermark(t *testing.T) {
	l, _ := newTestLeader(t, func(c *LeaderConfig) { c.HW = 10 })
	withStart := func(replica int32, offset, start int64, ms int) FollowerFetch {
		ev := fetchOf(replica, offset, 5, ms)
		ev.LogStartOffset = start
		return ev
	}
	require.Equal(t, int64(-1), l.LowWatermark(), "the followers have not fetched")
	l.Step(withStart(2, 10, 0, 1))
	l.Step(withStart(3, 10, 0, 1))
	require.Equal(t, int64(0), l.LowWatermark())
	l.Step(LogStartMoved{Start: 6})
	require.Equal(t, int64(0), l.LowWatermark(), "the followers have not moved yet")
	l.Step(withStart(2, 10, 6, 2))
	require.Equal(t, int64(0), l.LowWatermark(), "3 still holds it")
	l.Step(withStart(3, 10, 6, 3))
	require.Equal(t, int64(6), l.LowWatermark())
	l.Step(fetchOf(3, 10, 5, 4)) // LogStartOffset 0 is a log start too
	l.Step(FollowerFetch{Replica: 3, BrokerEpoch: 13, CurrentLeaderEpoch: 5, FetchOffset: 10, LastFetchedEpoch: 5, LogStartOffset: -1, Now: at(5)})
	require.Equal(t, int64(0), l.LowWatermark(), "-1 (not sent) keeps what 3 last said")

	// 3 stops fetching and leaves the ISR: it no longer holds the low
	// watermark once its removal commits.
	l.Step(LocalAppended{End: 20})
	l.Step(LocalDurable{End: 20})
	l.Step(withStart(2, 20, 6, 200))
	p, ok := find[ProposeISR](l.Step(Tick{Now: at(200)}))
	require.True(t, ok, "3 lags")
	require.Equal(t, int64(0), l.LowWatermark(), "a member being removed holds it until the removal commits")
	l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2}, Now: at(201)})
	require.Equal(t, int64(6), l.LowWatermark())
	require.Equal(t, int64(6), l.Status(at(201)).LowWatermark)
}

func TestLeaderLogStartMoved(t *testing.T) {
	l, _ := newTestLeader(t, nil)
	require.Equal(t, []Action{SaveEpochs{}}, l.Step(LogStartMoved{Start: 3}))
	require.Equal(t, entries(3, 3, 5, 10), l.epochs.Entries())
	require.Empty(t, l.Step(LogStartMoved{Start: 2}))
	require.Equal(t, int64(3), answerOf(t, l.Step(fetchOf(2, 1, -1, 1))).LogStartOffset)
}

// min.insync.replicas is a dynamic config: a metadata update of the same
// epochs changes it, for produce checks and for the HW, which a lower one
// may release.
func TestLeaderMinISRChangesWithTheMetadata(t *testing.T) {
	l, _ := newTestLeader(t, func(c *LeaderConfig) { c.ISR = []int32{1} })
	require.ErrorIs(t, l.CheckProduce(-1), kerr.NotEnoughReplicas)
	require.Empty(t, l.Step(LocalDurable{End: 10}), "frozen below min.insync.replicas 2")
	update := MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 7, ISR: []int32{1},
		Eligible: []ISRMember{{1, 11}, {2, 12}, {3, 13}}, MinISR: 1, Now: at(1)}
	require.Equal(t, []Action{AdvanceHW{To: 10}}, l.Step(update), "min.insync.replicas 1 lets the HW move")
	require.NoError(t, l.CheckProduce(-1))
	require.False(t, l.Status(at(1)).UnderMinISR)

	update.MinISR = 3
	require.Empty(t, l.Step(update))
	require.ErrorIs(t, l.CheckProduce(-1), kerr.NotEnoughReplicas, "raised to 3")
	update.MinISR = 0
	require.Empty(t, l.Step(update))
	require.ErrorIs(t, l.CheckProduce(-1), kerr.NotEnoughReplicas, "0 leaves it as it is")
}

// A reassignment changes the replica set within a leader epoch: the
// leader serves a replica added and takes it into the ISR once it has
// caught up, and refuses a replica removed, which bounds nothing after.
func TestLeaderReplicasChange(t *testing.T) {
	l, _ := newTestLeader(t, nil)
	eligible := []ISRMember{{1, 11}, {2, 12}, {3, 13}, {4, 14}}
	require.ErrorIs(t, answerOf(t, l.Step(fetchOf(4, 0, -1, 1))).Err, kerr.NotLeaderForPartition, "4 is no replica yet")

	l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3, 4}, Eligible: eligible, Now: at(2)})
	require.Equal(t, []int32{1, 2, 3}, l.ISR(), "an added replica starts outside the ISR")
	acts := l.Step(fetchOf(4, 5, 3, 3))
	require.NoError(t, answerOf(t, acts).Err)
	_, ok := find[ProposeISR](acts)
	require.False(t, ok, "behind: not proposed")
	p, ok := find[ProposeISR](l.Step(fetchOf(4, 10, 3, 4)))
	require.True(t, ok, "caught up: proposed")
	require.Equal(t, []int32{1, 2, 3, 4}, memberIDs(p.NewISR))
	require.Equal(t, ISRMember{4, 14}, p.NewISR[3], "with the broker epoch it fetched with")

	// The move completes: 2 is removed, in the same leader epoch.
	l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1, 3, 4}, Replicas: []int32{1, 3, 4}, Eligible: eligible, Now: at(5)})
	require.Equal(t, []int32{1, 3, 4}, l.ISR())
	require.Nil(t, l.Status(at(5)).Pending, "settled by the metadata")
	require.ErrorIs(t, answerOf(t, l.Step(fetchOf(2, 10, 3, 6))).Err, kerr.NotLeaderForPartition, "2 is no replica any more")
	require.NoError(t, answerOf(t, l.Step(fetchOf(3, 10, 3, 6))).Err)

	// An update without replicas leaves them as they are.
	l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1, 3, 4}, Eligible: eligible, Now: at(7)})
	require.NoError(t, answerOf(t, l.Step(fetchOf(4, 10, 3, 8))).Err)
}

// The AlterPartition answer that completes a move reaches the leader
// before the metadata that removes the old replica: the leader, still
// serving that replica, proposes it back into the ISR at the new partition
// epoch, and the controller refuses. The metadata then removes the
// replica, and the refused change must not hold the HW (it did: a producer
// waited forever for the last record of the move).
func TestLeaderDropsAChangeNamingARemovedReplica(t *testing.T) {
	l, _ := newTestLeader(t, nil)
	eligible := []ISRMember{{1, 11}, {2, 12}, {3, 13}, {4, 14}}
	l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 8, ISR: []int32{1, 3}, Replicas: []int32{1, 3, 4, 2}, Eligible: eligible, Now: at(1)})
	l.Step(fetchOf(3, 10, 3, 2))
	p, ok := find[ProposeISR](l.Step(fetchOf(4, 10, 3, 2)))
	require.True(t, ok)
	require.Equal(t, []int32{1, 3, 4}, memberIDs(p.NewISR))
	// The controller commits the expansion and, in the same record,
	// completes the move: replicas 1, 3, 4 at partition epoch 9.
	l.Step(AlterPartitionResult{Seq: p.Seq, LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1, 3, 4}, Now: at(3)})
	p, ok = find[ProposeISR](l.Step(fetchOf(2, 10, 3, 4)))
	require.True(t, ok, "2 caught up, still a replica as far as this leader knows")
	require.Contains(t, memberIDs(p.NewISR), int32(2))
	require.Empty(t, l.Step(AlterPartitionResult{Seq: p.Seq, Err: kerr.InvalidRequest, Now: at(5)}))

	l.Step(LocalAppended{End: 11})
	l.Step(LocalDurable{End: 11})
	l.Step(MetadataUpdate{LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1, 3, 4}, Replicas: []int32{1, 3, 4}, Eligible: eligible, Now: at(6)})
	require.Nil(t, l.Status(at(6)).Pending, "no controller can commit a change naming 2 at epoch 9")
	l.Step(fetchOf(3, 11, 5, 7))
	acts := l.Step(fetchOf(4, 11, 5, 7))
	adv, ok := find[AdvanceHW](acts)
	require.True(t, ok, "the HW moves with the ISR that is left")
	require.Equal(t, int64(11), adv.To)
}
