package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition reassignment (KIP-455). A reassignment moves a partition from
// its original replicas to a target set in two steps, each a
// ChangePartition record:
//
//  1. Start: Replicas becomes the target followed by the original replicas
//     the target lacks, AddingReplicas the target's new members and
//     RemovingReplicas the original's members the target lacks. The ISR
//     stays as it is: the adding replicas are followers that fetch from
//     the leader and join the ISR through AlterPartition once caught up,
//     like any other.
//  2. Completion: once every adding replica is in the ISR (and the ISR
//     keeps a member besides the removing ones), Replicas becomes the
//     target, the removing replicas leave the ISR and the ELR, and, if the
//     leader was one of them, a leader is elected from what is left of the
//     ISR (a new leader epoch). The brokers removed stop and delete their
//     replica when their metadata shows it (the reconciler's job).
//
// Completion is checked wherever the ISR can change (AlterPartition) and
// by the controller's tick, for a reassignment that can complete without
// an ISR change (one whose leader could not be elected before). A leader
// epoch changes only when the leader does: the leader learns a new replica
// set from the metadata, and a replica removed is no longer one, so its
// fetches are refused (NOT_LEADER_OR_FOLLOWER).

// Reassign decides one partition of an AlterPartitionReassignments
// request: target is the replica set to move to, nil to cancel the
// reassignment in progress. It returns the record to commit, nil when
// there is nothing to do (the partition is already on target, or moving to
// it). A reassignment that can complete at once (its target adds no
// replica, or only replicas in the ISR) does so in the same record. With
// allowRFChange false (AlterPartitionReassignments v1, KIP-860), a target
// of another size than the original replicas is refused. Errors wrap kerr
// values:
//   - UNKNOWN_TOPIC_OR_PARTITION;
//   - INVALID_REPLICA_ASSIGNMENT: the target is empty, repeats a broker,
//     names one never registered, or would leave the partition without an
//     in-sync replica or without the leader it has;
//   - INVALID_REPLICATION_FACTOR: the size changes and that is not allowed;
//   - NO_REASSIGNMENT_IN_PROGRESS: a cancellation of nothing.
func (s Settings) Reassign(m *Metadata, topic string, partition int32, target []int32, allowRFChange bool) (*Record, error) {
	t, ok := m.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%s-%d: %w", topic, partition, kerr.UnknownTopicOrPartition)
	}
	p := t.Partitions[partition]
	name := fmt.Sprintf("%s-%d", topic, partition)
	var n Partition
	if target == nil {
		if !p.Reassigning() {
			return nil, fmt.Errorf("%s: %w", name, kerr.NoReassignmentInProgress)
		}
		n = cancelled(p)
	} else {
		if err := checkTarget(m, target); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if orig := p.Original(); !allowRFChange && len(target) != len(orig) {
			return nil, fmt.Errorf("%s: %d replicas for %d, and the request does not allow a change of the replication factor: %w",
				name, len(target), len(orig), kerr.InvalidReplicationFactor)
		}
		n = moving(p, target)
		if c, ok := completed(m, n); ok {
			n = c
		}
	}
	if len(n.ISR) == 0 {
		return nil, fmt.Errorf("%s: replicas %v would keep none of the ISR %v: %w", name, n.Replicas, p.ISR, kerr.InvalidReplicaAssignment)
	}
	led, ok := ledBy(m, p, n)
	if !ok {
		return nil, fmt.Errorf("%s: no replica of %v that is in sync and active could lead in place of %d: %w",
			name, n.Replicas, p.Leader, kerr.InvalidReplicaAssignment)
	}
	st, changed := next(p, led)
	if !changed {
		return nil, nil
	}
	rec := change(t, int(partition), st)
	return &rec, nil
}

// checkTarget accepts a target of distinct, registered brokers.
func checkTarget(m *Metadata, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("an empty replica set: %w", kerr.InvalidReplicaAssignment)
	}
	for i, r := range target {
		if _, ok := m.Broker(r); !ok || slices.Contains(target[:i], r) {
			return fmt.Errorf("replica %d of %v is unknown or repeated: %w", r, target, kerr.InvalidReplicaAssignment)
		}
	}
	return nil
}

// moving is p on its way from its original replicas to target: Replicas
// the target then the original's others, the ISR and ELR kept where they
// are still replicas (a replica a previous target added and this one does
// not want leaves them).
func moving(p Partition, target []int32) Partition {
	orig := p.Original()
	n := p.Clone()
	n.Replicas = slices.Clone(target)
	for _, r := range orig {
		if !slices.Contains(target, r) {
			n.Replicas = append(n.Replicas, r)
		}
	}
	n.AddingReplicas = without(target, orig...)
	n.RemovingReplicas = without(orig, target...)
	n.ISR = without(inReplicaOrder(n.Replicas, p.ISR))
	n.ELR = without(inReplicaOrder(n.Replicas, p.ELR))
	return n
}

// cancelled is p back on its original replicas, the adding replicas out of
// the ISR and ELR. The original order is not kept (nor is it in Kafka,
// whose records hold the same): the replicas are those of the move without
// the adding ones, so the target's members come first.
func cancelled(p Partition) Partition {
	n := p.Clone()
	n.Replicas = p.Original()
	n.ISR = without(p.ISR, p.AddingReplicas...)
	n.ELR = without(p.ELR, p.AddingReplicas...)
	n.AddingReplicas, n.RemovingReplicas = nil, nil
	return n
}

// completed is p with its reassignment done, if it can be: every adding
// replica is in the ISR, the ISR keeps a member once the removing replicas
// leave it, and the partition keeps a leader if it has one (a removed
// leader is replaced by an active in-sync replica of the target). ok is
// false when there is nothing to complete, or not yet.
func completed(m *Metadata, p Partition) (Partition, bool) {
	if !p.Reassigning() {
		return p, false
	}
	isr := without(p.ISR, p.RemovingReplicas...)
	if len(isr) == 0 {
		return p, false
	}
	for _, r := range p.AddingReplicas {
		if !slices.Contains(isr, r) {
			return p, false
		}
	}
	n := p.Clone()
	n.Replicas = p.Target()
	n.ISR = isr
	n.ELR = without(p.ELR, p.RemovingReplicas...)
	n.AddingReplicas, n.RemovingReplicas = nil, nil
	return ledBy(m, p, n)
}

// ledBy is n with a leader: its current one while that is still in the
// ISR, else one elected cleanly (from the ISR, then the ELR) by the rules
// of every election. ok is false when cur had a leader and n could have
// none: a reassignment never takes a partition offline, and never makes an
// unclean election.
func ledBy(m *Metadata, cur, n Partition) (Partition, bool) {
	if n.Leader != NoLeader && slices.Contains(n.ISR, n.Leader) {
		return n, true
	}
	leader, kind := electLeader(n, m.isActive, false)
	if kind == electNone && cur.Leader != NoLeader {
		return cur, false
	}
	return withLeader(n, leader, kind), true
}

// CompleteReassignments are the records that complete every reassignment
// that can complete on m: the controller's tick runs it, for those whose
// last step was not an ISR change (their leader became electable later).
func (s Settings) CompleteReassignments(m *Metadata) []Record {
	var recs []Record
	for _, t := range m.Topics() {
		for i, p := range t.Partitions {
			if c, ok := completed(m, p); ok {
				if st, changed := next(p, c); changed {
					recs = append(recs, change(t, i, st))
				}
			}
		}
	}
	return recs
}

// Reassigned reports whether m shows partition on target (nil: with no
// reassignment in progress), done or under way: a broker waits for this
// on its own image before it answers AlterPartitionReassignments, so that
// a Metadata or ListPartitionReassignments request that follows sees it.
func Reassigned(m *Metadata, topic string, partition int32, target []int32) bool {
	t, ok := m.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return false
	}
	p := t.Partitions[partition]
	if target == nil {
		return !p.Reassigning()
	}
	return slices.Equal(p.Target(), target)
}

// Reassignments answers ListPartitionReassignments on m: the partitions
// named (null topics: every partition) whose reassignment is in progress,
// with their replicas, adding and removing replicas. Unknown topics and
// partitions, and those not moving, are left out, as Kafka does.
func Reassignments(m *Metadata, topics []kmsg.ListPartitionReassignmentsRequestTopic) []kmsg.ListPartitionReassignmentsResponseTopic {
	if topics == nil {
		for _, t := range m.Topics() {
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic = t.Name
			for i := range t.Partitions {
				rt.Partitions = append(rt.Partitions, int32(i))
			}
			topics = append(topics, rt)
		}
	}
	var out []kmsg.ListPartitionReassignmentsResponseTopic
	for _, rt := range topics {
		t, ok := m.Topic(rt.Topic)
		if !ok {
			continue
		}
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = t.Name
		for _, i := range rt.Partitions {
			if i < 0 || int(i) >= len(t.Partitions) || !t.Partitions[i].Reassigning() {
				continue
			}
			p := t.Partitions[i]
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = i
			sp.Replicas = slices.Clone(p.Replicas)
			sp.AddingReplicas = slices.Clone(p.AddingReplicas)
			sp.RemovingReplicas = slices.Clone(p.RemovingReplicas)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// alterReassignments serves AlterPartitionReassignments: every partition
// is decided on one image and the changes commit as one batch. A
// partition named twice is decided once, by its first mention, and
// answered at each.
func (c *ControllerCore) alterReassignments(o *Op, q Quorum, req *kmsg.AlterPartitionAssignmentsRequest) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	c.ready(o, q, func(err error) {
		resp.ErrorCode, resp.ErrorMessage = code(err), message(err)
		type tp struct {
			topic     string
			partition int32
		}
		decided := map[tp]error{}
		var recs []Record
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition = rp.Partition
				perr, seen := decided[tp{rt.Topic, rp.Partition}]
				if !seen {
					var rec *Record
					if perr = err; perr == nil {
						rec, perr = c.cfg.Settings.Reassign(o.img, rt.Topic, rp.Partition, rp.Replicas, allowRF)
					}
					if rec != nil {
						recs = append(recs, *rec)
					}
					decided[tp{rt.Topic, rp.Partition}] = perr
				}
				sp.ErrorCode, sp.ErrorMessage = code(perr), message(perr)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		o.commit(recs, func(_ uint64, err error) {
			if err != nil {
				for i := range resp.Topics {
					for j := range resp.Topics[i].Partitions {
						if sp := &resp.Topics[i].Partitions[j]; sp.ErrorCode == 0 {
							sp.ErrorCode, sp.ErrorMessage = code(err), message(err)
						}
					}
				}
			} else if len(recs) > 0 {
				c.log.Info("partition reassignments changed", "partitions", len(recs))
			}
			o.finish(resp, nil)
		})
	})
}

// listReassignments serves ListPartitionReassignments from the image the
// active controller decides on.
func (c *ControllerCore) listReassignments(o *Op, q Quorum, req *kmsg.ListPartitionReassignmentsRequest) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	c.ready(o, q, func(err error) {
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = code(err), message(err)
		} else {
			resp.Topics = Reassignments(o.img, req.Topics)
		}
		o.finish(resp, nil)
	})
}
