package kvlog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/kvlog"
)

func TestDecodeBatchRefusesDamage(t *testing.T) {
	b := engine.Batch{BaseOffset: 42, Records: 3, Data: []byte("some batch bytes")}
	good := kvlog.AppendValue(nil, b)
	got, err := kvlog.DecodeBatch(kvlog.BatchKey(42), good)
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
		{"flipped data byte", kvlog.BatchKey(42), flip(len(good) - 1)},
		{"flipped record count", kvlog.BatchKey(42), flip(7)},
		{"flipped checksum", kvlog.BatchKey(42), flip(0)},
		{"value under another key", kvlog.BatchKey(43), good},
		{"short value", kvlog.BatchKey(42), good[:kvlog.ValueHeader]},
		{"key of another kind", kvlog.StartKey, good},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kvlog.DecodeBatch(c.key, c.value)
			assert.ErrorIs(t, err, engine.ErrCorrupt, "damaged batches are ErrCorrupt, never data")
		})
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
	for i, off := range offs {
		k := kvlog.BatchKey(off)
		base, ok := kvlog.KeyBase(k)
		require.True(t, ok)
		assert.Equal(t, off, base, "a batch key decodes to its offset")
		assert.Less(t, string(kvlog.BatchSpace), string(k), "every batch key sorts above BatchSpace")
		assert.Less(t, string(k), string(kvlog.BatchLimit), "every batch key sorts below BatchLimit")
		if i > 0 {
			assert.Less(t, string(kvlog.BatchKey(offs[i-1])), string(k), "keys sort in offset order")
		}
	}
	_, ok := kvlog.KeyBase(kvlog.StartKey)
	assert.False(t, ok, "the start key is not a batch key")
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
