package replication

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func entries(pairs ...int64) []EpochEntry {
	var out []EpochEntry
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

func cache(t *testing.T, pairs ...int64) *EpochCache {
	t.Helper()
	c, err := NewEpochCache(entries(pairs...)...)
	require.NoError(t, err)
	return c
}

func TestEpochCacheAssign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   []int64 // epoch, offset pairs
		epoch   int32
		offset  int64
		changed bool
		want    []int64
	}{
		{"first entry", nil, 0, 0, true, []int64{0, 0}},
		{"a new epoch", []int64{0, 0}, 2, 10, true, []int64{0, 0, 2, 10}},
		{"the latest epoch again, later", []int64{0, 0, 2, 10}, 2, 15, false, []int64{0, 0, 2, 10}},
		{"the latest epoch again, same offset", []int64{0, 0, 2, 10}, 2, 10, false, []int64{0, 0, 2, 10}},
		{"the latest epoch earlier replaces it", []int64{0, 0, 2, 10}, 2, 5, true, []int64{0, 0, 2, 5}},
		// Kafka's rule: entries the new one would make non-monotonic go.
		{"a new epoch at the latest's start", []int64{0, 0, 2, 10}, 3, 10, true, []int64{0, 0, 3, 10}},
		{"a new epoch before the latest's start", []int64{0, 0, 2, 10, 3, 20}, 4, 12, true, []int64{0, 0, 2, 10, 4, 12}},
		{"an older epoch after the latest", []int64{0, 0, 2, 10}, 1, 20, true, []int64{0, 0, 1, 20}},
		{"negative epoch ignored", []int64{0, 0}, -1, 5, false, []int64{0, 0}},
		{"negative offset ignored", []int64{0, 0}, 1, -1, false, []int64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache(t, tc.start...)
			require.Equal(t, tc.changed, c.Assign(tc.epoch, tc.offset))
			require.Equal(t, entries(tc.want...), c.Entries())
		})
	}
}

func TestEpochCacheTruncate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		start     []int64
		fromEnd   bool
		offset    int64
		changed   bool
		want      []int64
		wantEmpty bool
	}{
		{"end: past every entry", []int64{0, 0, 2, 10}, true, 11, false, []int64{0, 0, 2, 10}, false},
		{"end: at an entry's start drops it", []int64{0, 0, 2, 10}, true, 10, true, []int64{0, 0}, false},
		{"end: inside the first", []int64{0, 0, 2, 10, 4, 20}, true, 5, true, []int64{0, 0}, false},
		{"end: everything", []int64{0, 3, 2, 10}, true, 3, true, nil, true},
		{"start: inside an entry adjusts it", []int64{0, 0, 2, 10, 4, 20}, false, 15, true, []int64{2, 15, 4, 20}, false},
		{"start: at an entry's start", []int64{0, 0, 2, 10}, false, 10, true, []int64{2, 10}, false},
		{"start: at the first's start", []int64{0, 0, 2, 10}, false, 0, false, []int64{0, 0, 2, 10}, false},
		{"start: before every entry", []int64{1, 5}, false, 3, false, []int64{1, 5}, false},
		{"start: past the last", []int64{0, 0, 2, 10}, false, 30, true, []int64{2, 30}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache(t, tc.start...)
			var changed bool
			if tc.fromEnd {
				changed = c.TruncateFromEnd(tc.offset)
			} else {
				changed = c.TruncateFromStart(tc.offset)
			}
			require.Equal(t, tc.changed, changed)
			if tc.wantEmpty {
				require.Empty(t, c.Entries())
				return
			}
			require.Equal(t, entries(tc.want...), c.Entries())
		})
	}
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	// Epochs 1, 3, 5 start at 0, 10, 20; the log ends at 30.
	c := cache(t, 1, 0, 3, 10, 5, 20)
	for _, tc := range []struct {
		name      string
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{"the latest epoch ends at the log end", 5, 5, 30},
		{"above the latest: the latest, at the log end", 7, 5, 30},
		{"a cached epoch ends where the next begins", 3, 3, 20},
		{"the first cached epoch", 1, 1, 10},
		{"between cached epochs: the one below", 4, 3, 20},
		{"between cached epochs: the one below (2)", 2, 1, 10},
		{"below every cached epoch: the asker's, where history begins", 0, 0, 0},
		{"no epoch", -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, end := c.EndOffsetFor(tc.epoch, 30)
			require.Equal(t, tc.wantEpoch, e)
			require.Equal(t, tc.wantEnd, end)
		})
	}
	t.Run("empty cache", func(t *testing.T) {
		e, end := cache(t).EndOffsetFor(3, 30)
		require.Equal(t, int32(-1), e)
		require.Equal(t, int64(-1), end)
	})
	t.Run("below every epoch after retention", func(t *testing.T) {
		c := cache(t, 4, 100, 6, 120)
		e, end := c.EndOffsetFor(2, 130)
		require.Equal(t, int32(2), e)
		require.Equal(t, int64(100), end)
	})
}

func TestEpochCacheMarshal(t *testing.T) {
	for _, pairs := range [][]int64{nil, {0, 0}, {1, 0, 3, 10, 5, 1 << 40}} {
		c := cache(t, pairs...)
		b := c.Marshal()
		require.Equal(t, b, c.Clone().Marshal(), "deterministic")
		got, err := UnmarshalEpochCache(b)
		require.NoError(t, err)
		require.Equal(t, c.Entries(), got.Entries())
	}
	good := cache(t, 1, 0, 3, 10).Marshal()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad version", append([]byte{9}, good[1:]...)},
		{"short", good[:len(good)-1]},
		{"long", append(slices.Clone(good), 0)},
		{"not increasing", cacheBytes(1, 0, 1, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := UnmarshalEpochCache(tc.b)
			require.True(t, errors.Is(err, ErrBadEpochs), "%v", err)
		})
	}
}

// cacheBytes encodes entries without NewEpochCache's checks.
func cacheBytes(pairs ...int64) []byte {
	return (&EpochCache{entries: entries(pairs...)}).Marshal()
}

func TestNewEpochCacheRefusesDisorder(t *testing.T) {
	for _, pairs := range [][]int64{{1, 0, 1, 5}, {1, 5, 2, 5}, {2, 0, 1, 5}, {-1, 0}} {
		_, err := NewEpochCache(entries(pairs...)...)
		require.Error(t, err, "%v", pairs)
	}
}

func TestRebuildEpochCache(t *testing.T) {
	batches := []BatchInfo{
		{BaseOffset: 0, LastOffset: 4, Epoch: 0},
		{BaseOffset: 5, LastOffset: 5, Epoch: 0},
		{BaseOffset: 6, LastOffset: 9, Epoch: 2},
		{BaseOffset: 10, LastOffset: 10, Epoch: 2},
		{BaseOffset: 11, LastOffset: 12, Epoch: 7},
	}
	c := RebuildEpochCache(slices.Values(batches))
	require.Equal(t, entries(0, 0, 2, 6, 7, 11), c.Entries())
	require.Equal(t, int32(7), c.LatestEpoch())
	require.Equal(t, int32(-1), RebuildEpochCache(slices.Values([]BatchInfo(nil))).LatestEpoch())
}
