package pebble

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

func TestDecodeBatchRefusesDamage(t *testing.T) {
	b := engine.Batch{BaseOffset: 42, Records: 3, Data: []byte("some batch bytes")}
	good := appendValue(nil, b)
	got, err := decodeBatch(batchKey(42), good)
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
		{"flipped data byte", batchKey(42), flip(len(good) - 1)},
		{"flipped record count", batchKey(42), flip(7)},
		{"flipped checksum", batchKey(42), flip(0)},
		{"value under another key", batchKey(43), good},
		{"short value", batchKey(42), good[:valueHeader]},
		{"key of another kind", startKey, good},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeBatch(c.key, c.value)
			assert.ErrorIs(t, err, engine.ErrCorrupt, "damaged batches are ErrCorrupt, never data")
		})
	}
}

func TestStartRecordRoundTrip(t *testing.T) {
	for _, start := range []int64{0, 1, 202, 1 << 40} {
		got, err := decodeStart(encodeStart(start))
		require.NoError(t, err)
		assert.Equal(t, start, got)
	}
	v := encodeStart(7)
	v[3] ^= 1
	_, err := decodeStart(v)
	assert.ErrorIs(t, err, engine.ErrCorrupt, "a damaged start record is ErrCorrupt")
}

func TestBatchKeysSortByOffset(t *testing.T) {
	offs := []int64{0, 1, 255, 256, 1 << 32, 1<<63 - 1}
	for i := 1; i < len(offs); i++ {
		assert.Less(t, string(batchKey(offs[i-1])), string(batchKey(offs[i])), "keys sort in offset order")
		assert.Less(t, string(batchKey(offs[i])), string(batchLimit), "every batch key sorts below batchLimit")
	}
}
