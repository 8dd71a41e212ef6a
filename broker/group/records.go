package group

import (
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
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

// encodeBatch is the coordinator's records as one uncompressed batch.
func encodeBatch(recs []Record, now time.Time) []byte {
	kvs := make([]batch.KV, len(recs))
	for i, r := range recs {
		kvs[i] = batch.KV{Key: r.Key, Value: r.Value}
	}
	return batch.Encode(kvs, now)
}

// errSkipBatch marks a batch the coordinator did not write and cannot read
// (compressed, control); replay logs and skips it.
var errSkipBatch = batch.ErrUnreadable

// decodeBatches is batch.Records: every record of the stored bytes, with its
// offset.
func decodeBatches(data []byte, fn func(off int64, r kmsg.Record), skip func(error)) (int64, error) {
	return batch.Records(data, fn, skip)
}
