package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
)

var codecs = []batch.Codec{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLz4, batch.CodecZstd}

func TestParseRealBatches(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			b := batchtest.Make(t, batchtest.Spec{
				Values: batchtest.Values("x", 10), Timestamps: []int64{5, 3, 9, 1, 2, 3, 4, 5, 6, 7},
				Codec: c, Idempotent: true, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 7,
			})
			h, err := batch.Parse(b)
			require.NoError(t, err)
			assert.Equal(t, len(b), h.Size())
			assert.Equal(t, int8(2), h.Magic)
			assert.Equal(t, c, h.Attributes.Codec())
			assert.False(t, h.Attributes.Transactional())
			assert.False(t, h.Attributes.Control())
			assert.False(t, h.Attributes.LogAppendTime())
			assert.Equal(t, int32(9), h.LastOffsetDelta)
			assert.Equal(t, int32(10), h.NumRecords)
			assert.Equal(t, int32(10), h.Offsets())
			assert.Equal(t, int64(5), h.FirstTimestamp)
			assert.Equal(t, int64(9), h.MaxTimestamp)
			assert.Equal(t, int64(42), h.ProducerID)
			assert.Equal(t, int16(3), h.ProducerEpoch)
			assert.Equal(t, int32(7), h.BaseSequence)
			assert.Equal(t, int32(16), h.LastSequence())
			assert.True(t, h.Idempotent())

			recs := batchtest.MustDecode(t, b)
			require.Len(t, recs, 10)
			assert.Equal(t, []byte("x-9"), recs[9].Value)
			assert.Equal(t, int64(9), recs[9].Offset)
			assert.Equal(t, int64(1), recs[3].Timestamp)
		})
	}
}

func TestPatchInPlaceKeepsCRC(t *testing.T) {
	b := batchtest.Plain(t, 3)
	batch.SetBaseOffset(b, 1<<40+5)
	batch.SetPartitionLeaderEpoch(b, 17)
	h, err := batch.Parse(b)
	require.NoError(t, err, "the patched fields lie outside the CRC")
	assert.Equal(t, int64(1<<40+5), h.BaseOffset)
	assert.Equal(t, int32(17), h.PartitionLeaderEpoch)
	assert.Equal(t, int64(1<<40+7), h.LastOffset())
	recs := batchtest.MustDecode(t, b)
	assert.Equal(t, int64(1<<40+6), recs[1].Offset)
}

// edit changes a copy of a good batch; recrc recomputes the CRC afterwards so
// the check under test is the one that fires, not the CRC.
type edit struct {
	name  string
	fn    func(b []byte) []byte
	recrc bool
	want  *kerr.Error
}

func putU32(off int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
}

func TestParseRejects(t *testing.T) {
	good := batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("v", 4), Idempotent: true, ProducerID: 1, ProducerEpoch: 0, BaseSequence: 0})
	cases := []edit{
		{name: "flipped CRC byte", fn: func(b []byte) []byte { b[18] ^= 0x01; return b }, want: kerr.CorruptMessage},
		{name: "flipped record byte", fn: func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }, want: kerr.CorruptMessage},
		{name: "flipped attributes byte", fn: func(b []byte) []byte { b[22] ^= 0x01; return b }, want: kerr.CorruptMessage},
		{name: "count above lastOffsetDelta+1", fn: putU32(57, 5), recrc: true, want: kerr.CorruptMessage},
		{name: "count below lastOffsetDelta+1", fn: putU32(57, 3), recrc: true, want: kerr.CorruptMessage},
		{name: "count and delta agree but records disagree", fn: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 3)
			binary.BigEndian.PutUint32(b[23:], 2)
			return b
		}, recrc: true, want: kerr.CorruptMessage},
		{name: "huge count", fn: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], math.MaxInt32)
			binary.BigEndian.PutUint32(b[23:], math.MaxInt32-1)
			return b
		}, recrc: true, want: kerr.CorruptMessage},
		{name: "negative count", fn: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 0xffffffff)
			binary.BigEndian.PutUint32(b[23:], 0xfffffffe)
			return b
		}, recrc: true, want: kerr.CorruptMessage},
		{name: "zero records", fn: func(b []byte) []byte {
			b = b[:batch.HeaderSize]
			binary.BigEndian.PutUint32(b[8:], batch.HeaderSize-12)
			binary.BigEndian.PutUint32(b[57:], 0)
			binary.BigEndian.PutUint32(b[23:], 0xffffffff)
			return b
		}, recrc: true, want: kerr.CorruptMessage},
		{name: "length field too large", fn: putU32(8, uint32(len(good)-11)), want: kerr.CorruptMessage},
		{name: "length field too small", fn: putU32(8, uint32(len(good)-13)), want: kerr.CorruptMessage},
		{name: "length field negative", fn: putU32(8, 0x80000000), want: kerr.CorruptMessage},
		{name: "truncated", fn: func(b []byte) []byte { return b[:len(b)-3] }, want: kerr.CorruptMessage},
		{name: "truncated to the header", fn: func(b []byte) []byte { return b[:40] }, want: kerr.CorruptMessage},
		{name: "truncated to the length prefix", fn: func(b []byte) []byte { return b[:10] }, want: kerr.CorruptMessage},
		{name: "empty", fn: func(b []byte) []byte { return nil }, want: kerr.CorruptMessage},
		{name: "magic 1", fn: func(b []byte) []byte { b[16] = 1; return b }, want: kerr.InvalidRecord},
		{name: "magic 0", fn: func(b []byte) []byte { b[16] = 0; return b }, want: kerr.InvalidRecord},
		{name: "magic 3", fn: func(b []byte) []byte { b[16] = 3; return b }, want: kerr.CorruptMessage},
		{name: "unknown codec", fn: func(b []byte) []byte { b[22] |= 0x05; return b }, recrc: true, want: kerr.CorruptMessage},
		{name: "transactional without a producer id", fn: func(b []byte) []byte {
			b[22] |= 0x10
			binary.BigEndian.PutUint64(b[43:], math.MaxUint64)
			return b
		}, recrc: true, want: kerr.InvalidRecord},
		{name: "control", fn: func(b []byte) []byte { b[22] |= 0x20; return b }, recrc: true, want: kerr.InvalidRecord},
		{name: "idempotent with negative sequence", fn: putU32(53, 0xffffffff), recrc: true, want: kerr.InvalidRecord},
		{name: "idempotent with negative epoch", fn: func(b []byte) []byte { b[51], b[52] = 0xff, 0xff; return b }, recrc: true, want: kerr.InvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.fn(bytes.Clone(good))
			if c.recrc {
				batchtest.Recrc(b)
			}
			_, err := batch.Parse(b)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.want, "error %v", err)
			other := kerr.InvalidRecord
			if c.want == kerr.InvalidRecord {
				other = kerr.CorruptMessage
			}
			assert.False(t, errors.Is(err, other), "error %v wraps both kinds", err)
		})
	}
}

func TestParseHeaderSkipsCRC(t *testing.T) {
	b := batchtest.Plain(t, 2)
	b[len(b)-1] ^= 0xff
	_, err := batch.ParseHeader(b)
	require.NoError(t, err, "ParseHeader reads stored batches and does not re-verify the CRC")
	_, err = batch.Parse(b)
	require.ErrorIs(t, err, kerr.CorruptMessage)
}

func TestSplit(t *testing.T) {
	a, b, c := batchtest.Plain(t, 1), batchtest.Plain(t, 5), batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("z", 3), Codec: batch.CodecZstd})
	all := bytes.Join([][]byte{a, b, c}, nil)

	t.Run("three batches", func(t *testing.T) {
		got, err := batch.Split(all)
		require.NoError(t, err)
		require.Len(t, got, 3)
		assert.Equal(t, a, got[0])
		assert.Equal(t, b, got[1])
		assert.Equal(t, c, got[2])
		assert.Equal(t, len(a), cap(got[0]), "capacity is clipped so appends cannot clobber the next batch")
	})
	bad := []struct {
		name string
		in   []byte
		want *kerr.Error
	}{
		{"empty", nil, kerr.InvalidRecord},
		{"trailing partial prefix", append(bytes.Clone(all), 0, 0, 0), kerr.CorruptMessage},
		{"trailing partial batch", all[:len(all)-1], kerr.CorruptMessage},
		{"length claims two gigabytes", func() []byte {
			x := bytes.Clone(a)
			binary.BigEndian.PutUint32(x[8:], math.MaxInt32)
			return x
		}(), kerr.CorruptMessage},
		{"negative length", func() []byte {
			x := bytes.Clone(a)
			binary.BigEndian.PutUint32(x[8:], 0xfffffff0)
			return x
		}(), kerr.CorruptMessage},
		{"length below header", func() []byte {
			x := bytes.Clone(a)
			binary.BigEndian.PutUint32(x[8:], 10)
			return x
		}(), kerr.CorruptMessage},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := batch.Split(c.in)
			assert.ErrorIs(t, err, c.want, "error %v", err)
		})
	}
	_, err := batch.Split(nil)
	assert.ErrorIs(t, err, batch.ErrEmpty)
}

func TestAddSequenceWraps(t *testing.T) {
	cases := []struct{ seq, n, want int32 }{
		{0, 0, 0},
		{0, 4, 4},
		{math.MaxInt32 - 2, 2, math.MaxInt32},
		{math.MaxInt32 - 2, 3, 0},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32, 5, 4},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, batch.AddSequence(c.seq, c.n), "AddSequence(%d, %d)", c.seq, c.n)
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	for _, m := range []batch.Marker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: 0}} {
		b := batch.EncodeMarker(batch.Producer{ID: 42, Epoch: 3}, m, now)
		h, err := batch.ParseHeader(b)
		require.NoError(t, err)
		assert.True(t, h.Attributes.Control())
		assert.True(t, h.Attributes.Transactional())
		assert.Equal(t, int64(42), h.ProducerID)
		assert.Equal(t, int16(3), h.ProducerEpoch)
		got, err := batch.ParseMarker(b)
		require.NoError(t, err)
		assert.Equal(t, m, got)
		// A client may not send one.
		_, err = batch.Parse(b)
		assert.ErrorIs(t, err, kerr.InvalidRecord)
	}
	_, err := batch.ParseMarker(batch.Encode([]batch.KV{{Value: []byte("x")}}, now))
	assert.ErrorIs(t, err, kerr.CorruptMessage)
}

func TestParseAcceptsTransactional(t *testing.T) {
	b := batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("v", 2), Idempotent: true,
		ProducerID: 9, ProducerEpoch: 1, ExtraAttributes: 0x10})
	h, err := batch.Parse(b)
	require.NoError(t, err)
	assert.True(t, h.Attributes.Transactional())
}
