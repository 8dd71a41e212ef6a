// Package batchcodec builds Kafka RecordBatch v2 bytes as a client does,
// with franz-go's record encoding (kmsg.Record, kmsg.RecordBatch) and
// compressors (kgo.DefaultCompressor), and decodes stored batches back
// into records: what the simulator's clients write and read, and what
// tests build batches with (through batchtest, which adds the testing
// helpers). It does not import testing, so that cmd/sim does not link it.
package batchcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Spec describes a batch. The zero value is one uncompressed, non-idempotent
// batch of no records (add Values).
type Spec struct {
	// Values are the record values, one record each.
	Values [][]byte
	// Keys, when set, are the record keys (same length as Values).
	Keys [][]byte
	// Timestamp is the first record's timestamp in milliseconds; record i
	// gets Timestamp+i unless Timestamps is set.
	Timestamp int64
	// Timestamps, when set, are the records' timestamps (same length as
	// Values); they need not be ascending.
	Timestamps []int64
	// Codec compresses the records.
	Codec batch.Codec
	// Idempotent sets ProducerID, ProducerEpoch and BaseSequence in the
	// header; otherwise they are -1.
	Idempotent    bool
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// ExtraAttributes are ORed into the attributes (e.g. transactional 0x10,
	// control 0x20), to build batches the broker must refuse.
	ExtraAttributes int16
}

// Build encodes the batch described by s with base offset 0.
func Build(s Spec) ([]byte, error) {
	if s.Keys != nil && len(s.Keys) != len(s.Values) {
		return nil, fmt.Errorf("batchcodec: %d keys for %d values", len(s.Keys), len(s.Values))
	}
	if s.Timestamps != nil && len(s.Timestamps) != len(s.Values) {
		return nil, fmt.Errorf("batchcodec: %d timestamps for %d values", len(s.Timestamps), len(s.Values))
	}
	first, maxTS := s.Timestamp, s.Timestamp
	if len(s.Timestamps) > 0 {
		first, maxTS = s.Timestamps[0], s.Timestamps[0]
	}
	var recs []byte
	for i, v := range s.Values {
		ts := s.Timestamp + int64(i)
		if s.Timestamps != nil {
			ts = s.Timestamps[i]
		}
		maxTS = max(maxTS, ts)
		r := kmsg.Record{TimestampDelta64: ts - first, OffsetDelta: int32(i), Value: v}
		if s.Keys != nil {
			r.Key = s.Keys[i]
		}
		// Length counts the bytes after itself; encoded as 0 it takes one byte.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	codec, err := compress(s.Codec, recs)
	if err != nil {
		return nil, err
	}
	b := kmsg.RecordBatch{
		FirstOffset:     0,
		Magic:           2,
		Attributes:      int16(s.Codec) | s.ExtraAttributes,
		LastOffsetDelta: int32(len(s.Values)) - 1,
		FirstTimestamp:  first,
		MaxTimestamp:    maxTS,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(s.Values)),
		Records:         codec,
	}
	if s.Idempotent {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = s.ProducerID, s.ProducerEpoch, s.BaseSequence
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batch.LengthOverhead))
	Recrc(out)
	return out, nil
}

func compress(c batch.Codec, recs []byte) ([]byte, error) {
	if c == batch.CodecNone {
		return recs, nil
	}
	codecs := map[batch.Codec]kgo.CompressionCodec{
		batch.CodecGzip:   kgo.GzipCompression(),
		batch.CodecSnappy: kgo.SnappyCompression(),
		batch.CodecLz4:    kgo.Lz4Compression(),
		batch.CodecZstd:   kgo.ZstdCompression(),
	}
	cc, ok := codecs[c]
	if !ok {
		return nil, fmt.Errorf("batchcodec: unknown codec %d", c)
	}
	comp, err := kgo.DefaultCompressor(cc)
	if err != nil {
		return nil, fmt.Errorf("batchcodec: %s compressor: %w", c, err)
	}
	out, used := comp.Compress(new(bytes.Buffer), recs)
	if int8(used) != int8(c) {
		return nil, fmt.Errorf("batchcodec: compressing with %s used codec %d", c, used)
	}
	return bytes.Clone(out), nil
}

// Recrc recomputes the CRC-32C of batch b in place (after a test edits a
// field inside the CRC on purpose).
func Recrc(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

// Values returns n values "<prefix>-0" ... "<prefix>-(n-1)".
func Values(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

// Record is one decoded record with its absolute offset and timestamp.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
}

// Decode splits stored bytes (concatenated batches, as a Fetch returns them)
// into records, decompressing as needed.
func Decode(stored []byte) ([]Record, error) {
	batches, err := batch.Split(stored)
	if err != nil {
		return nil, err
	}
	dec := kgo.DefaultDecompressor()
	var out []Record
	for i, b := range batches {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return nil, fmt.Errorf("batch %d: %w", i, err)
		}
		recs, err := dec.Decompress(b[batch.HeaderSize:], kgo.CompressionCodecType(h.Attributes.Codec()))
		if err != nil {
			return nil, fmt.Errorf("batch %d: decompress %s: %w", i, h.Attributes.Codec(), err)
		}
		for j := int32(0); j < h.NumRecords; j++ {
			var r kmsg.Record
			length, n := binary.Varint(recs)
			if n <= 0 || int64(len(recs)-n) < length {
				return nil, fmt.Errorf("batch %d record %d: bad length", i, j)
			}
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				return nil, fmt.Errorf("batch %d record %d: %w", i, j, err)
			}
			recs = recs[n+int(length):]
			out = append(out, Record{
				Offset:    h.BaseOffset + int64(r.OffsetDelta),
				Timestamp: h.FirstTimestamp + r.TimestampDelta64,
				Key:       r.Key, Value: r.Value,
			})
		}
	}
	return out, nil
}
