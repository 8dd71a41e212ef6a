package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions written to __consumer_offsets. Keys: version 0 and 1 are
// offset commits, 2 is group metadata (Kafka's classic layout); values are
// the latest non-flexible versions, which every Kafka tool reads.
const (
	offsetKeyVersion     = 1
	metadataKeyVersion   = 2
	offsetValueVersion   = 3
	metadataValueVersion = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

func offsetValue(o Offset) []byte {
	v := kmsg.OffsetCommitValue{
		Version:         offsetValueVersion,
		Offset:          o.Offset,
		LeaderEpoch:     o.LeaderEpoch,
		Metadata:        o.Metadata,
		CommitTimestamp: o.CommitTime.UnixMilli(),
	}
	return v.AppendTo(nil)
}

func metadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: metadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// metadataRecord is the group as it must come back after a restart: the
// generation, protocol, leader and every member with its subscription (for
// the selected protocol) and assignment.
func (g *Group) metadataRecord(now time.Time) Record {
	v := kmsg.GroupMetadataValue{
		Version:               metadataValueVersion,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		Protocol:              nullable(g.protocol),
		Leader:                nullable(g.leader),
		CurrentStateTimestamp: now.UnixMilli(),
	}
	for _, m := range g.members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID:               m.id,
			InstanceID:             nullable(m.instanceID),
			ClientID:               m.clientID,
			ClientHost:             m.clientHost,
			RebalanceTimeoutMillis: int32(m.rebalanceTimeout.Milliseconds()),
			SessionTimeoutMillis:   int32(m.sessionTimeout.Milliseconds()),
			Subscription:           m.metadataFor(g.protocol),
			Assignment:             m.assignment,
		})
	}
	return Record{Key: metadataKey(g.id), Value: v.AppendTo(nil)}
}

// Batch layout constants (Kafka RecordBatch v2).
const (
	batchHeaderBytes = 61 // through the record count
	batchLengthAt    = 8  // int32 length of what follows it
	batchCRCAt       = 17 // int32 CRC-32C of everything after it
	batchAttrsAt     = 21
	batchOverhead    = 49 // header bytes counted by the length field
)

// encodeBatch builds one uncompressed RecordBatch v2 holding recs, with base
// offset 0 (the log assigns the real one) and no producer id.
func encodeBatch(recs []Record, now time.Time) []byte {
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		enc := rec.AppendTo(nil) // a zero Length encodes as one byte: replace it
		body = binary.AppendVarint(body, int64(len(enc)-1))
		body = append(body, enc[1:]...)
	}
	ts := now.UnixMilli()
	b := kmsg.RecordBatch{
		Length:               int32(batchOverhead + len(body)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchCRCAt:], crc32.Checksum(out[batchAttrsAt:], castagnoli))
	return out
}

// errSkipBatch marks a batch the coordinator did not write and cannot read
// (compressed, control); replay logs and skips it.
var errSkipBatch = errors.New("batch not readable by the group coordinator")

// decodeBatches splits stored bytes into batches and calls fn for each
// record with its offset; a batch it cannot read (errSkipBatch) goes to skip
// instead. It returns the offset just past the last batch.
func decodeBatches(data []byte, fn func(off int64, r kmsg.Record), skip func(error)) (int64, error) {
	next := int64(-1)
	for len(data) > 0 {
		if len(data) < batchHeaderBytes {
			return next, fmt.Errorf("truncated batch header: %d bytes", len(data))
		}
		n := int(binary.BigEndian.Uint32(data[batchLengthAt:])) + 12
		if n < batchHeaderBytes || n > len(data) {
			return next, fmt.Errorf("batch length %d outside [%d, %d]", n, batchHeaderBytes, len(data))
		}
		if got := crc32.Checksum(data[batchAttrsAt:n], castagnoli); got != binary.BigEndian.Uint32(data[batchCRCAt:]) {
			return next, fmt.Errorf("batch at %d: crc mismatch", int64(binary.BigEndian.Uint64(data)))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:n]); err != nil {
			return next, fmt.Errorf("batch at %d: %w", b.FirstOffset, err)
		}
		data = data[n:]
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		if err := decodeRecords(&b, fn); errors.Is(err, errSkipBatch) {
			skip(fmt.Errorf("batch at %d: %w", b.FirstOffset, err))
		} else if err != nil {
			return next, fmt.Errorf("batch at %d: %w", b.FirstOffset, err)
		}
	}
	return next, nil
}

func decodeRecords(b *kmsg.RecordBatch, fn func(off int64, r kmsg.Record)) error {
	if b.Magic != 2 {
		return fmt.Errorf("magic %d: %w", b.Magic, errSkipBatch)
	}
	if b.Attributes&0x07 != 0 || b.Attributes&0x20 != 0 {
		return fmt.Errorf("attributes %#x (compressed or control): %w", b.Attributes, errSkipBatch)
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
