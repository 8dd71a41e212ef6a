package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// KV is one record's key and value.
type KV struct{ Key, Value []byte }

// Encode builds one uncompressed RecordBatch v2 holding recs, with base
// offset 0 (the log assigns the real one), no producer id and the time now:
// what the broker writes itself (the group coordinator's records, the
// metadata log served to brokers).
func Encode(recs []KV, now time.Time) []byte {
	return encode(recs, 0, Producer{ID: -1, Epoch: -1}, now)
}

// Producer names the producer a broker-written batch is part of.
type Producer struct {
	ID    int64
	Epoch int16
}

// EncodeTxn is Encode for records the broker writes inside producer pr's
// transaction (the group coordinator's TxnOffsetCommit): a transactional
// batch whose base sequence is -1, as Kafka writes them, since the broker,
// not the producer, numbers nothing in it.
func EncodeTxn(recs []KV, pr Producer, now time.Time) []byte {
	return encode(recs, attrTransactional, pr, now)
}

func encode(recs []KV, attrs Attributes, pr Producer, now time.Time) []byte {
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		enc := rec.AppendTo(nil) // a zero Length encodes as one byte: replace it
		body = binary.AppendVarint(body, int64(len(enc)-1))
		body = append(body, enc[1:]...)
	}
	ts := now.UnixMilli()
	b := kmsg.RecordBatch{
		Length:               int32((HeaderSize - LengthOverhead) + len(body)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(attrs),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           pr.ID,
		ProducerEpoch:        pr.Epoch,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// ErrUnreadable marks a batch Records cannot read (compressed, control).
var ErrUnreadable = errors.New("batch not readable: compressed or control")

// Records splits stored bytes into batches and calls fn for each record
// with its offset; a batch it cannot read (ErrUnreadable) goes to skip
// instead. It returns the offset just past the last batch.
func Records(data []byte, fn func(off int64, r kmsg.Record), skip func(error)) (int64, error) {
	next := int64(-1)
	for len(data) > 0 {
		if len(data) < HeaderSize {
			return next, fmt.Errorf("truncated batch header: %d bytes", len(data))
		}
		n := int(binary.BigEndian.Uint32(data[offLength:])) + LengthOverhead
		if n < HeaderSize || n > len(data) {
			return next, fmt.Errorf("batch length %d outside [%d, %d]", n, HeaderSize, len(data))
		}
		if got := crc32.Checksum(data[offAttributes:n], castagnoli); got != binary.BigEndian.Uint32(data[offCRC:]) {
			return next, fmt.Errorf("batch at %d: crc mismatch", int64(binary.BigEndian.Uint64(data)))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:n]); err != nil {
			return next, fmt.Errorf("batch at %d: %w", b.FirstOffset, err)
		}
		data = data[n:]
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		if err := decodeRecords(&b, fn); errors.Is(err, ErrUnreadable) {
			skip(fmt.Errorf("batch at %d: %w", b.FirstOffset, err))
		} else if err != nil {
			return next, fmt.Errorf("batch at %d: %w", b.FirstOffset, err)
		}
	}
	return next, nil
}

func decodeRecords(b *kmsg.RecordBatch, fn func(off int64, r kmsg.Record)) error {
	if b.Magic != 2 {
		return fmt.Errorf("magic %d: %w", b.Magic, ErrUnreadable)
	}
	if b.Attributes&0x07 != 0 || b.Attributes&0x20 != 0 {
		return fmt.Errorf("attributes %#x (compressed or control): %w", b.Attributes, ErrUnreadable)
	}
	recs := b.Records
	for i := int32(0); i < b.NumRecords; i++ {
		l, n := binary.Varint(recs)
		if n <= 0 || l < 0 || int64(len(recs)-n) < l {
			return fmt.Errorf("record %d: bad length", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		recs = recs[n+int(l):]
		fn(b.FirstOffset+int64(r.OffsetDelta), r)
	}
	return nil
}
