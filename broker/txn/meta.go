package txn

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transactional id's state, Kafka's TransactionState.
type State = kmsg.TransactionState

// The states, as Kafka numbers them in __transaction_state.
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Meta is what the coordinator keeps of one transactional id: the value of
// its record in __transaction_state (kmsg.TxnMetadataValue).
type Meta struct {
	ID         string
	ProducerID int64
	Epoch      int16
	// LastEpoch is the epoch before the last bump (-1: none), so that a
	// producer retrying an InitProducerId whose answer it lost (KIP-360),
	// or an EndTxn under KIP-890, is recognized rather than fenced.
	LastEpoch int16
	// PrevProducerID is the id before the epoch ran out and a new id was
	// given (-1: none).
	PrevProducerID int64
	Timeout        time.Duration
	State          State
	Partitions     map[TopicPartition]struct{}
	// Start is when the transaction began (its first AddPartitions), Update
	// when the meta last changed.
	Start, Update time.Time
	// TV2: the producer ends transactions with EndTxn v5+ (KIP-890 part 2),
	// so each end bumps its epoch.
	TV2 bool
}

// clone is a deep copy.
func (m *Meta) clone() *Meta {
	c := *m
	c.Partitions = maps.Clone(m.Partitions)
	if c.Partitions == nil {
		c.Partitions = map[TopicPartition]struct{}{}
	}
	return &c
}

// SortedPartitions lists the transaction's partitions by topic, then number.
func (m *Meta) SortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(m.Partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// recordKey and recordValue are m's record in __transaction_state, in
// Kafka's formats (key version 0, value version 1: flexible, with the
// tagged fields KIP-890 added).
func recordKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

func (m *Meta) recordValue() []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch = m.ProducerID, m.Epoch
	v.TimeoutMillis = int32(m.Timeout.Milliseconds())
	v.State = m.State
	v.LastUpdateTimestamp = m.Update.UnixMilli()
	v.StartTimestamp = -1
	if !m.Start.IsZero() {
		v.StartTimestamp = m.Start.UnixMilli()
	}
	v.PreviousProducerID, v.NextProducerID = m.PrevProducerID, -1
	v.NextProducerEpoch = m.LastEpoch
	if m.TV2 {
		v.ClientTransactionVersion = 2
	}
	var cur *kmsg.TxnMetadataValueTopic
	for _, tp := range m.SortedPartitions() {
		if cur == nil || cur.Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			cur = &v.Topics[len(v.Topics)-1]
		}
		cur.Partitions = append(cur.Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

// decodeRecord reads one record of __transaction_state: the id, and its
// meta (nil for a tombstone).
func decodeRecord(key, value []byte) (string, *Meta, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("transaction key %x: %w", key, err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("transaction %q value: %w", k.TransactionalID, err)
	}
	m := &Meta{
		ID: k.TransactionalID, ProducerID: v.ProducerID, Epoch: v.ProducerEpoch,
		LastEpoch: v.NextProducerEpoch, PrevProducerID: v.PreviousProducerID,
		Timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, State: v.State,
		Partitions: map[TopicPartition]struct{}{},
		Update:     time.UnixMilli(v.LastUpdateTimestamp),
		TV2:        v.ClientTransactionVersion >= 2,
	}
	if v.Version < 1 {
		m.LastEpoch, m.PrevProducerID = -1, -1
	}
	if v.StartTimestamp >= 0 {
		m.Start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}
