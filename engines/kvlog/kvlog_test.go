package kvlog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

// spaces are a log alone in its database and two logs of a store.
var spaces = []kvlog.Space{{}, kvlog.LogSpace(1), kvlog.LogSpace(0x1ff)}

func TestDecodeBatchRefusesDamage(t *testing.T) {
	for _, sp := range spaces {
		b := engine.Batch{BaseOffset: 42, Records: 3, Data: []byte("some batch bytes")}
		good := kvlog.AppendValue(nil, b)
		got, err := sp.DecodeBatch(sp.BatchKey(42), good)
		require.NoError(t, err)
		assert.Equal(t, b, got, "a stored batch decodes to itself")

		flip := func(i int) []byte {
			v := append([]byte(nil), good...)
			v[i] ^= 0x10
			return v
		}
		for _, c := range []struct {
			name       string
			key, value []byte
		}{
			{"flipped data byte", sp.BatchKey(42), flip(len(good) - 1)},
			{"flipped record count", sp.BatchKey(42), flip(7)},
			{"flipped checksum", sp.BatchKey(42), flip(0)},
			{"value under another key", sp.BatchKey(43), good},
			{"short value", sp.BatchKey(42), good[:kvlog.ValueHeader]},
			{"key of another kind", sp.StartKey(), good},
			{"key of another log", kvlog.LogSpace(7).BatchKey(42), good},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := sp.DecodeBatch(c.key, c.value)
				assert.ErrorIs(t, err, engine.ErrCorrupt, "damaged batches are ErrCorrupt, never data")
			})
		}
	}
}

func TestOffsetRecordRoundTrip(t *testing.T) {
	for _, off := range []int64{0, 1, 202, 1 << 40} {
		got, err := kvlog.DecodeOffset(kvlog.EncodeOffset(off))
		require.NoError(t, err)
		assert.Equal(t, off, got)
	}
	v := kvlog.EncodeOffset(7)
	v[3] ^= 1
	_, err := kvlog.DecodeOffset(v)
	assert.ErrorIs(t, err, engine.ErrCorrupt, "a damaged offset record is ErrCorrupt")
	_, err = kvlog.DecodeOffset(v[:8])
	assert.ErrorIs(t, err, engine.ErrCorrupt, "a short offset record is ErrCorrupt")
}

func TestBatchKeysSortByOffset(t *testing.T) {
	offs := []int64{0, 1, 255, 256, 1 << 32, 1<<63 - 1}
	for _, sp := range spaces {
		for i, off := range offs {
			k := sp.BatchKey(off)
			base, ok := sp.KeyBase(k)
			require.True(t, ok)
			assert.Equal(t, off, base, "a batch key decodes to its offset")
			assert.Less(t, string(sp.BatchSpace()), string(k), "every batch key sorts above BatchSpace")
			assert.Less(t, string(k), string(sp.BatchLimit()), "every batch key sorts below BatchLimit")
			if i > 0 {
				assert.Less(t, string(sp.BatchKey(offs[i-1])), string(k), "keys sort in offset order")
			}
		}
		_, ok := sp.KeyBase(sp.StartKey())
		assert.False(t, ok, "the start key is not a batch key")
	}
}

// Each log of a store is one key range, apart from the others' and from
// the store's own keys.
func TestLogSpacesAreRanges(t *testing.T) {
	ids := []engine.LogID{0, 1, 0xff, 0x100, 1<<64 - 2}
	for i, id := range ids {
		sp := kvlog.LogSpace(id)
		for _, k := range [][]byte{sp.BatchKey(0), sp.BatchKey(1<<63 - 1), sp.StartKey(), sp.MetaKey('t')} {
			assert.LessOrEqual(t, string(sp.Lower()), string(k), "log %d's keys lie in its range", id)
			assert.Less(t, string(k), string(sp.Upper()), "log %d's keys lie in its range", id)
		}
		if i > 0 {
			assert.LessOrEqual(t, string(kvlog.LogSpace(ids[i-1]).Upper()), string(sp.Lower()), "the ranges of logs %d and %d do not overlap", ids[i-1], id)
		}
		for _, k := range [][]byte{kvlog.FormatKey, kvlog.NextKey, kvlog.LogKey(id)} {
			assert.False(t, string(sp.Lower()) <= string(k) && string(k) < string(sp.Upper()), "the store's key %q is no log's", k)
		}
		got, ok := kvlog.LogKeyID(kvlog.LogKey(id))
		assert.True(t, ok)
		assert.Equal(t, id, got, "a log key decodes to its id")
	}
	assert.Nil(t, kvlog.Space{}.Upper(), "a log alone in its database has no upper bound")
}

// TestCollector feeds the collector what a store iterator yields over the
// log [10, 13) [13, 20) [20, 21) [25, 26), 100 bytes a batch, which has a
// hole at [21, 25).
func TestCollector(t *testing.T) {
	batch := func(base int64, records int32) engine.Batch {
		return engine.Batch{BaseOffset: base, Records: records, Data: make([]byte, 100)}
	}
	b10, b13, b20, b25 := batch(10, 3), batch(13, 7), batch(20, 1), batch(25, 1)
	for _, c := range []struct {
		name     string
		offset   int64
		maxBytes int
		walk     []engine.Batch // what the iterator yields
		want     []engine.Batch
		corrupt  bool
	}{
		{"at least one batch", 11, 0, []engine.Batch{b10, b13}, []engine.Batch{b10}, false},
		{"as many as fit", 10, 250, []engine.Batch{b10, b13, b20}, []engine.Batch{b10, b13}, false},
		{"exactly fitting", 13, 200, []engine.Batch{b13, b20, b25}, []engine.Batch{b13, b20}, false},
		{"a hole is never served", 13, 1000, []engine.Batch{b13, b20, b25}, nil, true},
		{"the batch holding the offset is gone", 20, 1000, []engine.Batch{b13}, nil, false},
		{"a first batch past the offset", 22, 1000, []engine.Batch{b25}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := kvlog.Collector{Offset: c.offset, MaxBytes: c.maxBytes}
			var err error
			for _, b := range c.walk {
				if col.Full(len(b.Data)) {
					break
				}
				var more bool
				if more, err = col.Add(b); err != nil || !more {
					break
				}
			}
			if c.corrupt {
				assert.ErrorIs(t, err, engine.ErrCorrupt)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, col.Batches)
			want := c.offset
			if len(c.want) > 0 {
				want = c.want[len(c.want)-1].NextOffset()
			}
			assert.Equal(t, want, col.Next())
		})
	}
}
