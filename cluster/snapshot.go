package cluster

import (
	"encoding/json"
	"fmt"
)

// snapshotFile is an image as JSON: what the quorum stores as a snapshot
// and sends a follower too far behind.
type snapshotFile struct {
	Offset         uint64    `json:"offset"`
	ClusterID      string    `json:"clusterId"`
	NextProducerID int64     `json:"nextProducerId"`
	Brokers        []*Broker `json:"brokers"`
	Topics         []*Topic  `json:"topics"`
	// ClusterConfigs are the dynamic cluster-wide broker configs.
	ClusterConfigs map[string]string `json:"clusterConfigs,omitempty"`
	// BrokerConfigs are the dynamic configs of single brokers, by id.
	BrokerConfigs map[int32]map[string]string `json:"brokerConfigs,omitempty"`
}

// MarshalSnapshot encodes the whole image.
func (m *Metadata) MarshalSnapshot() ([]byte, error) {
	b, err := json.Marshal(snapshotFile{
		Offset: m.offset, ClusterID: m.clusterID, NextProducerID: m.nextProducerID,
		Brokers: m.Brokers(), Topics: m.Topics(), ClusterConfigs: m.clusterConfigs,
		BrokerConfigs: m.brokerConfigs,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: encode snapshot: %w", err)
	}
	return b, nil
}

// UnmarshalSnapshot decodes an image MarshalSnapshot encoded, checking the
// same invariants Apply keeps.
func UnmarshalSnapshot(b []byte) (*Metadata, error) {
	var f snapshotFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cluster: decode snapshot: %w", err)
	}
	m := Empty()
	m.offset, m.clusterID, m.nextProducerID = f.Offset, f.ClusterID, f.NextProducerID
	for k, v := range f.ClusterConfigs {
		if err := checkConfig(ResourceBroker, k, &v); err != nil {
			return nil, fmt.Errorf("cluster: snapshot: %w", err)
		}
	}
	m.clusterConfigs = f.ClusterConfigs
	for id, cs := range f.BrokerConfigs {
		for k, v := range cs {
			if _, ok := throttleRates[k]; !ok || id < 0 {
				return nil, fmt.Errorf("cluster: snapshot: broker %d: config %s is not kept per broker", id, k)
			}
			if err := checkConfig(ResourceBroker, k, &v); err != nil {
				return nil, fmt.Errorf("cluster: snapshot: broker %d: %w", id, err)
			}
		}
	}
	m.brokerConfigs = f.BrokerConfigs
	for _, br := range f.Brokers {
		if _, dup := m.brokers[br.ID]; dup || br == nil {
			return nil, fmt.Errorf("cluster: snapshot: broker %d twice", br.ID)
		}
		m.brokers[br.ID] = br
	}
	for _, t := range f.Topics {
		if t == nil {
			return nil, fmt.Errorf("cluster: snapshot: null topic")
		}
		if _, dup := m.names[t.Name]; dup {
			return nil, fmt.Errorf("cluster: snapshot: topic %q twice", t.Name)
		}
		if _, dup := m.topics[t.ID]; dup {
			return nil, fmt.Errorf("cluster: snapshot: topic id %s twice", t.ID)
		}
		for k, v := range t.Configs {
			if err := checkConfig(ResourceTopic, k, &v); err != nil {
				return nil, fmt.Errorf("cluster: snapshot: topic %q: %w", t.Name, err)
			}
		}
		for i, p := range t.Partitions {
			if err := checkPartition(p); err != nil {
				return nil, fmt.Errorf("cluster: snapshot: %s-%d: %w", t.Name, i, err)
			}
		}
		m.topics[t.ID], m.names[t.Name] = t, t.ID
	}
	return m, nil
}
