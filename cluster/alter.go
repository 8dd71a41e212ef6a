package cluster

import (
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ISRMember is a replica proposed for an ISR with the broker epoch its
// leader saw it fetch with (-1 when the request does not say, before
// AlterPartition v3).
type ISRMember struct {
	ID    int32
	Epoch int64
}

// AlterISR is one partition of an AlterPartition request: the leader's
// proposal of a new ISR, made against the partition epoch it knows.
type AlterISR struct {
	Broker         int32
	BrokerEpoch    int64
	TopicID        uuid.UUID
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []ISRMember
}

// AlterPartition decides a leader's ISR change. It returns the record to
// commit (nil when the ISR is already what was asked) and the partition's
// state after it; an ISR that takes in the last replica a reassignment
// adds completes the reassignment in the same record (which may elect
// another leader, when the leader is one of the replicas removed). Errors
// wrap kerr values:
//   - STALE_BROKER_EPOCH: the request is from an earlier incarnation;
//   - UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION;
//   - NOT_LEADER_OR_FOLLOWER: the requester does not lead the partition;
//   - FENCED_LEADER_EPOCH: its leader epoch is not the current one;
//   - INVALID_UPDATE_VERSION: its partition epoch is stale, so it decided
//     on an ISR that has changed since (KIP-497);
//   - INVALID_REQUEST: the ISR lacks the leader or names a non-replica;
//   - INELIGIBLE_REPLICA: a replica added is fenced or shutting down
//     (KIP-841), or its broker epoch is not the registered one, so its
//     fetch came from an earlier incarnation, maybe one with an empty disk
//     (KIP-903).
func (s Settings) AlterPartition(m *Metadata, r AlterISR) (*Record, Partition, error) {
	s = s.Dynamic(m) // the cluster-wide dynamic defaults
	b, ok := m.Broker(r.Broker)
	if !ok || b.Epoch != r.BrokerEpoch {
		return nil, Partition{}, fmt.Errorf("AlterPartition from broker %d epoch %d: %w", r.Broker, r.BrokerEpoch, kerr.StaleBrokerEpoch)
	}
	t, ok := m.TopicByID(r.TopicID)
	if !ok {
		return nil, Partition{}, fmt.Errorf("topic %s: %w", r.TopicID, kerr.UnknownTopicID)
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return nil, Partition{}, fmt.Errorf("%s-%d: %w", t.Name, r.Partition, kerr.UnknownTopicOrPartition)
	}
	p := t.Partitions[r.Partition]
	name := fmt.Sprintf("%s-%d", t.Name, r.Partition)
	stale := !s.mut.has(MutationAlterStaleEpochs)
	switch {
	case p.Leader != r.Broker:
		return nil, p, fmt.Errorf("%s: broker %d is not the leader (%d): %w", name, r.Broker, p.Leader, kerr.NotLeaderForPartition)
	case r.LeaderEpoch != p.LeaderEpoch && stale:
		return nil, p, fmt.Errorf("%s: leader epoch %d, current %d: %w", name, r.LeaderEpoch, p.LeaderEpoch, kerr.FencedLeaderEpoch)
	case r.PartitionEpoch != p.PartitionEpoch && stale:
		return nil, p, fmt.Errorf("%s: partition epoch %d, current %d: %w", name, r.PartitionEpoch, p.PartitionEpoch, kerr.InvalidUpdateVersion)
	}
	var isr []int32
	for _, mem := range r.NewISR {
		if !slices.Contains(p.Replicas, mem.ID) || slices.Contains(isr, mem.ID) {
			return nil, p, fmt.Errorf("%s: ISR member %d is not a replica of %v, or repeated: %w", name, mem.ID, p.Replicas, kerr.InvalidRequest)
		}
		if err := s.eligible(m, p, mem); err != nil {
			return nil, p, fmt.Errorf("%s: %w", name, err)
		}
		isr = append(isr, mem.ID)
	}
	if !slices.Contains(isr, p.Leader) {
		return nil, p, fmt.Errorf("%s: new ISR %v lacks the leader %d: %w", name, isr, p.Leader, kerr.InvalidRequest)
	}
	isr = inReplicaOrder(p.Replicas, isr)
	n := withISR(p, isr, s.MinISR(t), s.elr())
	// An ISR that now holds every replica a reassignment adds completes it
	// in the same record (reassign.go).
	if c, ok := completed(m, n); ok {
		n = c
	}
	st, changed := next(p, n)
	if !changed {
		return nil, p, nil
	}
	rec := change(t, int(r.Partition), st)
	return &rec, st, nil
}

// eligible says whether mem may be in p's ISR.
func (s Settings) eligible(m *Metadata, p Partition, mem ISRMember) error {
	b, ok := m.Broker(mem.ID)
	if !ok {
		return fmt.Errorf("replica %d is not registered: %w", mem.ID, kerr.IneligibleReplica)
	}
	if mem.Epoch >= 0 && mem.Epoch != b.Epoch && !s.mut.has(MutationAlterAnyBrokerEpoch) {
		return fmt.Errorf("replica %d fetched with broker epoch %d, registered %d: %w", mem.ID, mem.Epoch, b.Epoch, kerr.IneligibleReplica)
	}
	if !slices.Contains(p.ISR, mem.ID) && !b.Active() && !s.mut.has(MutationAlterFencedMembers) {
		return fmt.Errorf("replica %d is fenced or shutting down: %w", mem.ID, kerr.IneligibleReplica)
	}
	return nil
}
