package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
)

// ErrRefused wraps every reason Apply refuses a batch. The batch changes
// nothing on any replica; the decision that produced it was made on an
// image that has moved on since (or is a bug), and is made again.
var ErrRefused = errors.New("cluster: batch refused")

// Apply returns the image after the batch recs at log offset offset, or
// the image unchanged and an error wrapping ErrRefused if any record does
// not fit it: a batch is applied whole or not at all. offset must be
// larger than m.Offset().
func (m *Metadata) Apply(offset uint64, recs []Record) (*Metadata, error) {
	if offset <= m.offset {
		return m, fmt.Errorf("%w: offset %d not after %d", ErrRefused, offset, m.offset)
	}
	d := m.clone()
	d.offset = offset
	for i, r := range recs {
		if err := d.apply(offset, r); err != nil {
			// The offset still counts as applied: the entry is consumed.
			same := *m
			same.offset = offset
			return &same, fmt.Errorf("%w: record %d of %d: %w", ErrRefused, i+1, len(recs), err)
		}
	}
	return d, nil
}

func (d *Metadata) apply(offset uint64, r Record) error {
	switch {
	case r.Bootstrap != nil:
		if d.clusterID != "" && d.clusterID != r.Bootstrap.ClusterID {
			return fmt.Errorf("cluster id %q already set, not %q", d.clusterID, r.Bootstrap.ClusterID)
		}
		d.clusterID = r.Bootstrap.ClusterID
	case r.RegisterBroker != nil:
		return d.register(offset, r.RegisterBroker)
	case r.FenceBroker != nil:
		return d.brokerState(r.FenceBroker, func(b *Broker) { b.Fenced = true })
	case r.UnfenceBroker != nil:
		return d.brokerState(r.UnfenceBroker, func(b *Broker) { b.Fenced = false })
	case r.ShutdownBroker != nil:
		return d.brokerState(r.ShutdownBroker, func(b *Broker) { b.ShuttingDown = true })
	case r.CreateTopic != nil:
		return d.createTopic(r.CreateTopic)
	case r.AddPartitions != nil:
		return d.addPartitions(r.AddPartitions)
	case r.DeleteTopic != nil:
		t, ok := d.topics[r.DeleteTopic.TopicID]
		if !ok {
			return fmt.Errorf("delete unknown topic %s", r.DeleteTopic.TopicID)
		}
		delete(d.topics, t.ID)
		delete(d.names, t.Name)
	case r.ChangePartition != nil:
		return d.changePartition(r.ChangePartition)
	case r.ProducerIDs != nil:
		p := r.ProducerIDs
		if p.First != d.nextProducerID || p.Count < 1 {
			return fmt.Errorf("producer ids [%d, +%d) do not start at the next id %d", p.First, p.Count, d.nextProducerID)
		}
		if b, ok := d.brokers[p.Broker]; !ok || b.Epoch != p.BrokerEpoch {
			return fmt.Errorf("producer ids for broker %d epoch %d, which is not registered", p.Broker, p.BrokerEpoch)
		}
		d.nextProducerID = p.First + p.Count
	case r.Config != nil:
		return d.applyConfig(r.Config)
	case r.Barrier != nil:
	default:
		return errors.New("empty record")
	}
	return nil
}

func (d *Metadata) register(offset uint64, r *RegisterBroker) error {
	if r.ID < 0 {
		return fmt.Errorf("broker id %d", r.ID)
	}
	if old, ok := d.brokers[r.ID]; ok && old.Incarnation == r.Incarnation {
		return fmt.Errorf("broker %d incarnation %s registered twice", r.ID, r.Incarnation)
	}
	b := &Broker{
		ID: r.ID, Incarnation: r.Incarnation, Epoch: int64(offset),
		Host: r.Host, Port: r.Port, Rack: r.Rack, LogDir: r.LogDir, Fenced: true,
	}
	d.brokers[r.ID] = b
	return nil
}

func (d *Metadata) brokerState(ref *BrokerRef, change func(*Broker)) error {
	b, ok := d.brokers[ref.ID]
	if !ok || b.Epoch != ref.Epoch {
		return fmt.Errorf("broker %d epoch %d is not the registered one", ref.ID, ref.Epoch)
	}
	nb := *b
	change(&nb)
	d.brokers[ref.ID] = &nb
	return nil
}

func (d *Metadata) createTopic(r *CreateTopic) error {
	if err := ValidTopicName(r.Name); err != nil {
		return err
	}
	if _, ok := d.names[r.Name]; ok {
		return fmt.Errorf("topic %q exists", r.Name)
	}
	if _, ok := d.topics[r.ID]; ok || r.ID == uuid.Nil {
		return fmt.Errorf("topic id %s in use or nil", r.ID)
	}
	for name := range d.names {
		if confusable(name) == confusable(r.Name) {
			return fmt.Errorf("topic %q collides with %q", r.Name, name)
		}
	}
	if len(r.Partitions) == 0 {
		return fmt.Errorf("topic %q without partitions", r.Name)
	}
	t := &Topic{Name: r.Name, ID: r.ID, Configs: r.Configs}
	for i, p := range r.Partitions {
		if err := checkPartition(p); err != nil {
			return fmt.Errorf("topic %q partition %d: %w", r.Name, i, err)
		}
		t.Partitions = append(t.Partitions, p.Clone())
	}
	d.topics[r.ID] = t
	d.names[r.Name] = r.ID
	return nil
}

func (d *Metadata) addPartitions(r *AddPartitions) error {
	t, ok := d.topics[r.TopicID]
	if !ok {
		return fmt.Errorf("add partitions to unknown topic %s", r.TopicID)
	}
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	for _, p := range r.Partitions {
		if err := checkPartition(p); err != nil {
			return fmt.Errorf("topic %q new partition: %w", t.Name, err)
		}
		nt.Partitions = append(nt.Partitions, p.Clone())
	}
	d.topics[t.ID] = &nt
	return nil
}

func (d *Metadata) changePartition(r *ChangePartition) error {
	t, ok := d.topics[r.TopicID]
	if !ok || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return fmt.Errorf("change of unknown partition %s/%d", r.TopicID, r.Partition)
	}
	cur, next := t.Partitions[r.Partition], r.State
	switch {
	case next.PartitionEpoch != cur.PartitionEpoch+1:
		return fmt.Errorf("%s-%d: partition epoch %d after %d", t.Name, r.Partition, next.PartitionEpoch, cur.PartitionEpoch)
	case next.Leader != cur.Leader && next.LeaderEpoch != cur.LeaderEpoch+1,
		next.Leader == cur.Leader && next.LeaderEpoch != cur.LeaderEpoch:
		return fmt.Errorf("%s-%d: leader %d epoch %d after leader %d epoch %d",
			t.Name, r.Partition, next.Leader, next.LeaderEpoch, cur.Leader, cur.LeaderEpoch)
	}
	if err := checkPartition(next); err != nil {
		return fmt.Errorf("%s-%d: %w", t.Name, r.Partition, err)
	}
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	nt.Partitions[r.Partition] = next.Clone()
	d.topics[t.ID] = &nt
	return nil
}

// checkPartition applies the invariants every partition state keeps: the
// ISR and ELR are disjoint sets of replicas, the leader is in the ISR, and
// a reassignment's adding and removing replicas are disjoint sets of
// replicas that leave a target to move to.
func checkPartition(p Partition) error {
	if len(p.Replicas) == 0 {
		return errors.New("no replicas")
	}
	seen := map[int32]bool{}
	for _, r := range p.Replicas {
		if seen[r] || r < 0 {
			return fmt.Errorf("replicas %v repeat or are negative", p.Replicas)
		}
		seen[r] = true
	}
	moving := map[int32]bool{}
	for _, r := range append(slices.Clone(p.AddingReplicas), p.RemovingReplicas...) {
		if !seen[r] || moving[r] {
			return fmt.Errorf("adding %v and removing %v replicas not disjoint sets of replicas %v", p.AddingReplicas, p.RemovingReplicas, p.Replicas)
		}
		moving[r] = true
	}
	if len(p.RemovingReplicas) == len(p.Replicas) {
		return fmt.Errorf("every replica of %v is being removed", p.Replicas)
	}
	inISR := map[int32]bool{}
	for _, r := range p.ISR {
		if !seen[r] || inISR[r] {
			return fmt.Errorf("ISR %v not a set of replicas %v", p.ISR, p.Replicas)
		}
		inISR[r] = true
	}
	inELR := map[int32]bool{}
	for _, r := range p.ELR {
		if !seen[r] || inISR[r] || inELR[r] {
			return fmt.Errorf("ELR %v not a set of replicas %v outside the ISR %v", p.ELR, p.Replicas, p.ISR)
		}
		inELR[r] = true
	}
	if p.Leader != NoLeader && !inISR[p.Leader] {
		return fmt.Errorf("leader %d not in ISR %v", p.Leader, p.ISR)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("negative epochs %d, %d", p.LeaderEpoch, p.PartitionEpoch)
	}
	return nil
}

// applyConfig sets or deletes one dynamic config, copying the map it
// changes: earlier images share the old one.
func (d *Metadata) applyConfig(c *ConfigChange) error {
	if err := checkConfig(c.ResourceType, c.Name, c.Value); err != nil {
		return err
	}
	switch c.ResourceType {
	case ResourceTopic:
		t, ok := d.topics[c.TopicID]
		if !ok || t.Name != c.ResourceName {
			return fmt.Errorf("config %s of unknown topic %q (%s)", c.Name, c.ResourceName, c.TopicID)
		}
		nt := *t
		nt.Configs = withConfig(t.Configs, c.Name, c.Value)
		d.topics[t.ID] = &nt
	case ResourceBroker:
		id, ok := brokerResource(c.ResourceName)
		if !ok {
			return fmt.Errorf("config %s of broker resource %q", c.Name, c.ResourceName)
		}
		if id < 0 {
			d.clusterConfigs = withConfig(d.clusterConfigs, c.Name, c.Value)
			return nil
		}
		if _, ok := throttleRates[c.Name]; !ok {
			return fmt.Errorf("config %s of broker %d: only the throttle rates are kept per broker", c.Name, id)
		}
		d.brokerConfigs = maps.Clone(d.brokerConfigs)
		if d.brokerConfigs == nil {
			d.brokerConfigs = map[int32]map[string]string{}
		}
		if d.brokerConfigs[id] = withConfig(d.brokerConfigs[id], c.Name, c.Value); d.brokerConfigs[id] == nil {
			delete(d.brokerConfigs, id)
		}
	default:
		return fmt.Errorf("config %s of resource type %d", c.Name, c.ResourceType)
	}
	return nil
}

// withConfig is a copy of m with key set to value, or deleted when value
// is nil; nil when nothing is left.
func withConfig(m map[string]string, key string, value *string) map[string]string {
	out := maps.Clone(m)
	if value == nil {
		delete(out, key)
	} else {
		if out == nil {
			out = map[string]string{}
		}
		out[key] = *value
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
