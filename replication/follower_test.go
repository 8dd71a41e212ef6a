package replication

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// newTestFollower is broker 2 following broker 1 in epoch 5, under
// sync=always, with a log of epochs 1 (0-9) and 3 (10-19), all durable, HW 15.
func newTestFollower(t *testing.T, mod func(*FollowerConfig)) *Follower {
	t.Helper()
	cfg := FollowerConfig{
		Self: 2, BrokerEpoch: 12, Leader: 1, LeaderEpoch: 5, CountDurable: true,
		LogEnd: 20, DurableEnd: 20, HW: 15, Epochs: cache(t, 1, 0, 3, 10),
	}
	if mod != nil {
		mod(&cfg)
	}
	f, acts, err := NewFollower(cfg)
	require.NoError(t, err)
	require.Empty(t, acts)
	return f
}

func TestFollowerNextFetch(t *testing.T) {
	f := newTestFollower(t, nil)
	req, ok := f.NextFetch()
	require.True(t, ok)
	require.Equal(t, FetchRequest{Leader: 1, Replica: 2, BrokerEpoch: 12, CurrentLeaderEpoch: 5, FetchOffset: 20, LastFetchedEpoch: 3}, req)

	// Under sync=always the next fetch waits until what came is synced: its
	// offset is what the leader counts as on this disk.
	acts := f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 18, Batches: []BatchInfo{{20, 24, 5, false}}})
	require.Equal(t, []Action{Append{Batches: []BatchInfo{{20, 24, 5, false}}}, SaveEpochs{}, AdvanceHW{To: 18}}, acts)
	_, ok = f.NextFetch()
	require.False(t, ok)
	require.True(t, f.State().SyncPending)
	f.Step(LocalDurable{End: 23})
	_, ok = f.NextFetch()
	require.False(t, ok, "partly synced")
	f.Step(LocalDurable{End: 25})
	req, ok = f.NextFetch()
	require.True(t, ok)
	require.Equal(t, int64(25), req.FetchOffset)
	require.Equal(t, int32(5), req.LastFetchedEpoch)

	// Other policies take an append as durable.
	g := newTestFollower(t, func(c *FollowerConfig) { c.CountDurable = false })
	g.Step(FetchResponse{FetchOffset: 20, Batches: []BatchInfo{{20, 24, 5, false}}})
	req, ok = g.NextFetch()
	require.True(t, ok)
	require.Equal(t, int64(25), req.FetchOffset)

	// An empty log has no epoch to check.
	e := newTestFollower(t, func(c *FollowerConfig) { c.LogEnd, c.DurableEnd, c.HW, c.Epochs = 0, 0, 0, cache(t) })
	req, _ = e.NextFetch()
	require.Equal(t, int32(-1), req.LastFetchedEpoch)
}

func TestFollowerAppend(t *testing.T) {
	f := newTestFollower(t, nil)
	acts := f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 40, LogStartOffset: 12,
		Batches: []BatchInfo{{20, 21, 3, false}, {22, 25, 4, false}, {26, 26, 5, false}}})
	require.Equal(t, []Action{
		Append{Batches: []BatchInfo{{20, 21, 3, false}, {22, 25, 4, false}, {26, 26, 5, false}}},
		SaveEpochs{},
		AdvanceHW{To: 27}, // the leader's HW, capped by the local end
		DeleteBefore{Offset: 12},
		SaveEpochs{},
	}, acts)
	require.Equal(t, entries(3, 12, 4, 22, 5, 26), f.epochs.Entries())
	s := f.State()
	require.Equal(t, int64(27), s.LogEnd)
	require.Equal(t, int64(20), s.DurableEnd)

	// The leader's start is followed only up to the local HW.
	g := newTestFollower(t, nil)
	acts = g.Step(FetchResponse{FetchOffset: 20, HighWatermark: 15, LogStartOffset: 18})
	require.Equal(t, []Action{DeleteBefore{Offset: 15}, SaveEpochs{}}, acts)

	// An empty answer moves only the HW.
	h := newTestFollower(t, nil)
	require.Equal(t, []Action{AdvanceHW{To: 20}}, h.Step(FetchResponse{FetchOffset: 20, HighWatermark: 30}))
	require.Empty(t, h.Step(FetchResponse{FetchOffset: 20, HighWatermark: 10}), "never back")
}

func TestFollowerRefusesBadBatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches []BatchInfo
	}{
		{"corrupt", []BatchInfo{{20, 21, 5, false}, {22, 22, 5, true}}},
		{"a gap", []BatchInfo{{21, 22, 5, false}}},
		{"an overlap", []BatchInfo{{20, 21, 5, false}, {21, 23, 5, false}}},
		{"starts before the local end", []BatchInfo{{19, 21, 5, false}}},
		{"ends before it starts", []BatchInfo{{20, 19, 5, false}}},
		{"an epoch above the leader's", []BatchInfo{{20, 21, 6, false}}},
		{"an epoch going back", []BatchInfo{{20, 21, 4, false}, {22, 22, 3, false}}},
		{"an epoch below the log's", []BatchInfo{{20, 21, 2, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFollower(t, nil)
			acts := f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 30, Batches: tc.batches})
			require.Len(t, acts, 1)
			b, ok := acts[0].(Backoff)
			require.True(t, ok, "%T", acts[0])
			require.True(t, errors.Is(b.Err, kerr.CorruptMessage), "%v", b.Err)
			require.Equal(t, int64(20), f.State().LogEnd, "nothing stored")
			require.Equal(t, int64(15), f.HW(), "nothing of the response taken")
			req, ok := f.NextFetch()
			require.True(t, ok)
			require.Equal(t, int64(20), req.FetchOffset, "fetched again")
		})
	}
}

func TestFollowerIgnoresStaleResponses(t *testing.T) {
	f := newTestFollower(t, nil)
	require.Empty(t, f.Step(FetchResponse{FetchOffset: 18, HighWatermark: 30, Batches: []BatchInfo{{18, 19, 3, false}}}))
	require.Empty(t, f.Step(FetchResponse{FetchOffset: 18, Err: kerr.OffsetOutOfRange, LogStartOffset: 100}))
	require.Equal(t, int64(20), f.State().LogEnd)
}

func TestFollowerErrors(t *testing.T) {
	t.Run("below the leader's log start: reset there", func(t *testing.T) {
		f := newTestFollower(t, nil)
		acts := f.Step(FetchResponse{FetchOffset: 20, Err: kerr.OffsetOutOfRange, LogStartOffset: 50, HighWatermark: 60})
		require.Equal(t, []Action{ResetLog{Start: 50}, SaveEpochs{}, AdvanceHW{To: 50}}, acts)
		s := f.State()
		require.Equal(t, [3]int64{50, 50, 50}, [3]int64{s.LogStart, s.LogEnd, s.DurableEnd})
		req, ok := f.NextFetch()
		require.True(t, ok)
		require.Equal(t, int64(50), req.FetchOffset)
		require.Equal(t, int32(-1), req.LastFetchedEpoch)
	})
	for _, tc := range []struct {
		name  string
		err   error
		stale bool
	}{
		{"out of range above the leader's start", kerr.OffsetOutOfRange, false},
		{"the leader is behind us: it will catch up", kerr.UnknownLeaderEpoch, false},
		{"not the leader", kerr.NotLeaderForPartition, false},
		{"storage", kerr.KafkaStorageError, false},
		{"we are behind the leader: wait for metadata", kerr.FencedLeaderEpoch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFollower(t, nil)
			acts := f.Step(FetchResponse{FetchOffset: 20, Err: tc.err, LogStartOffset: 5})
			require.Len(t, acts, 1)
			_, ok := f.NextFetch()
			if tc.stale {
				require.Equal(t, NeedMetadata{Err: tc.err}, acts[0])
				require.False(t, ok)
				require.Equal(t, tc.err, f.State().Stale)
				require.Empty(t, f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 30}), "ignores responses")
				return
			}
			require.Equal(t, Backoff{Err: tc.err}, acts[0])
			require.True(t, ok)
		})
	}
}

func TestFollowerTruncation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cache   []int64 // the follower's; its log ends at 20
		leader  EpochEnd
		to      int64
		entries []int64
	}{
		// The leader's epoch 3 ended at 16; ours at 20.
		{"the leader's end of our epoch", []int64{1, 0, 3, 10}, EpochEnd{3, 16}, 16, []int64{1, 0, 3, 10}},
		// We wrote epoch 4 from 17 on that the leader never had; its epoch 3
		// ends later than ours, so ours is where we part.
		{"our end of the leader's epoch", []int64{1, 0, 3, 10, 4, 17}, EpochEnd{3, 19}, 17, []int64{1, 0, 3, 10}},
		// KIP-279: we lack the leader's epoch 2: back to the end of our epoch
		// 1, then the next fetch checks again.
		{"an epoch we lack", []int64{1, 0, 3, 10}, EpochEnd{2, 15}, 10, []int64{1, 0}},
		{"below all our epochs", []int64{3, 10}, EpochEnd{2, 12}, 10, nil},
		{"no epochs of our own", nil, EpochEnd{2, 12}, 12, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFollower(t, func(c *FollowerConfig) { c.Epochs = cache(t, tc.cache...) })
			d := tc.leader
			acts := f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 30, DivergingEpoch: &d})
			require.Equal(t, Truncate{To: tc.to}, acts[0])
			require.Equal(t, entries(tc.entries...), f.epochs.Entries())
			s := f.State()
			require.Equal(t, tc.to, s.LogEnd)
			require.Equal(t, min(int64(15), tc.to), s.HW)
			require.LessOrEqual(t, s.DurableEnd, tc.to)
		})
	}
	t.Run("the log start bounds it", func(t *testing.T) {
		f := newTestFollower(t, func(c *FollowerConfig) { c.LogStart, c.HW = 12, 15 })
		require.Equal(t, Truncate{To: 12}, f.Step(FetchResponse{FetchOffset: 20, DivergingEpoch: &EpochEnd{2, 8}})[0])
	})
	t.Run("no truncation point: back off", func(t *testing.T) {
		f := newTestFollower(t, nil)
		for _, d := range []EpochEnd{{-1, -1}, {3, 25}} {
			acts := f.Step(FetchResponse{FetchOffset: 20, DivergingEpoch: &d})
			require.Len(t, acts, 1)
			b, ok := acts[0].(Backoff)
			require.True(t, ok)
			require.True(t, errors.Is(b.Err, errNoTruncation))
		}
	})
}

// TestKIP279Converges follows a follower through two rounds of divergence.
// The leader's log: epoch 1 at 0-7, epoch 2 at 8-11 (written by a leader
// this follower never followed), epoch 4 from 12. The follower's: epoch 1
// at 0-9 (two records the leader of epoch 2 never had), epoch 3 at 10-19.
// It lacks epoch 2, so the first round only cuts back to the end of its
// epoch 1; the second finds where epoch 1 parts.
func TestKIP279Converges(t *testing.T) {
	leader := cache(t, 1, 0, 2, 8, 4, 12)
	f := newTestFollower(t, func(c *FollowerConfig) { c.HW, c.Epochs = 6, cache(t, 1, 0, 3, 10) })
	var truncations []int64
	for range 5 {
		req, ok := f.NextFetch()
		require.True(t, ok)
		e, end := leader.EndOffsetFor(req.LastFetchedEpoch, 30)
		if e >= req.LastFetchedEpoch && req.FetchOffset <= end {
			break
		}
		acts := f.Step(FetchResponse{FetchOffset: req.FetchOffset, DivergingEpoch: &EpochEnd{e, end}})
		truncations = append(truncations, acts[0].(Truncate).To)
	}
	require.Equal(t, []int64{10, 8}, truncations)
	require.Equal(t, entries(1, 0), f.epochs.Entries())
	require.Equal(t, int64(6), f.HW(), "never below the HW in a clean run")
}

// A replica that led an epoch without writing in it keeps that epoch at its
// log end; following a leader that never had it, it fetches with it, and
// the leader's diverging epoch ends exactly at the follower's end. Found by
// the simulator (go run ./cmd/sim -seed 73): the follower backed off
// forever and never rejoined the ISR. It drops the empty epoch instead.
func TestFollowerDropsEmptyEpochsAtItsEnd(t *testing.T) {
	f := newTestFollower(t, func(c *FollowerConfig) { c.Epochs = cache(t, 1, 0, 3, 10, 4, 20) })
	req, ok := f.NextFetch()
	require.True(t, ok)
	require.Equal(t, int32(4), req.LastFetchedEpoch)
	acts := f.Step(FetchResponse{FetchOffset: 20, DivergingEpoch: &EpochEnd{Epoch: 3, EndOffset: 25}})
	require.Equal(t, []Action{SaveEpochs{}}, acts)
	req, ok = f.NextFetch()
	require.True(t, ok)
	require.Equal(t, int32(3), req.LastFetchedEpoch)
	require.Equal(t, int64(20), req.FetchOffset)
	// With nothing left to drop, a diverging answer at the end is a backoff.
	acts = f.Step(FetchResponse{FetchOffset: 20, DivergingEpoch: &EpochEnd{Epoch: 3, EndOffset: 25}})
	require.Len(t, acts, 1)
	require.IsType(t, Backoff{}, acts[0])
}

// A replica that led epoch 4 without writing follows a leader whose next
// batch, at its log end, is of epoch 3: the batch is appended and the
// empty epoch dropped, not refused as out of order. Found by the
// simulator (seeds 4723 and 5731): the follower refused it forever.
func TestFollowerAppendsBelowAnEmptyEpoch(t *testing.T) {
	f := newTestFollower(t, func(c *FollowerConfig) { c.Epochs = cache(t, 1, 0, 3, 10, 4, 20) })
	acts := f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 20, Batches: []BatchInfo{{20, 22, 3, false}}})
	require.Equal(t, []Action{Append{Batches: []BatchInfo{{20, 22, 3, false}}}, SaveEpochs{}, AdvanceHW{To: 20}}, acts)
	require.Equal(t, int32(3), f.epochs.LatestEpoch())
}

// LeaderHW is the highest HW the leader reported: a follower catching up
// knows how far behind it is, and reports 0 behind once it has caught up.
func TestFollowerLeaderHW(t *testing.T) {
	f := newTestFollower(t, func(c *FollowerConfig) { c.CountDurable = false })
	require.Equal(t, int64(15), f.State().LeaderHW, "the local HW before any response")
	f.Step(FetchResponse{FetchOffset: 20, HighWatermark: 100, Batches: []BatchInfo{{20, 24, 5, false}}})
	st := f.State()
	require.Equal(t, int64(100), st.LeaderHW)
	require.Equal(t, int64(25), st.HW, "the HW clamped to the log; the leader's is not")
	require.Equal(t, int64(75), st.LeaderHW-st.LogEnd, "behind")
	f.Step(FetchResponse{FetchOffset: 25, HighWatermark: 90})
	require.Equal(t, int64(100), f.State().LeaderHW, "never back")
	f.Step(FetchResponse{FetchOffset: 25, Err: kerr.NotLeaderForPartition, HighWatermark: 500})
	require.Equal(t, int64(100), f.State().LeaderHW, "an error's HW says nothing")
	f.Step(FetchResponse{FetchOffset: 25, HighWatermark: 100, Batches: []BatchInfo{{25, 99, 5, false}}})
	st = f.State()
	require.Equal(t, st.LogEnd, st.LeaderHW, "caught up")
}
