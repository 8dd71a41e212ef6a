package cluster

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Record is one change to the metadata. Exactly one field is set. Records
// travel in batches (one log entry each), encoded as JSON so that an
// operator, a scenario test and a diff can read them.
type Record struct {
	// Bootstrap names the cluster; it is the first record of every log.
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
	// RegisterBroker registers a process start: a new incarnation gets the
	// batch's log offset as its broker epoch, and starts fenced.
	RegisterBroker *RegisterBroker `json:"registerBroker,omitempty"`
	// FenceBroker, UnfenceBroker and ShutdownBroker change a broker's state;
	// each names the epoch it applies to and is refused for any other.
	FenceBroker    *BrokerRef `json:"fenceBroker,omitempty"`
	UnfenceBroker  *BrokerRef `json:"unfenceBroker,omitempty"`
	ShutdownBroker *BrokerRef `json:"shutdownBroker,omitempty"`
	// CreateTopic adds a topic with all its partitions.
	CreateTopic *CreateTopic `json:"createTopic,omitempty"`
	// AddPartitions grows a topic (CreatePartitions).
	AddPartitions *AddPartitions `json:"addPartitions,omitempty"`
	// DeleteTopic removes a topic; its id is never reused.
	DeleteTopic *DeleteTopic `json:"deleteTopic,omitempty"`
	// ChangePartition replaces one partition's state: leadership, ISR,
	// and, for a reassignment, its replicas.
	ChangePartition *ChangePartition `json:"changePartition,omitempty"`
	// ProducerIDs hands a block of producer ids to a broker.
	ProducerIDs *ProducerIDs `json:"producerIds,omitempty"`
	// Config sets or deletes one dynamic config (Kafka's ConfigRecord).
	Config *ConfigChange `json:"config,omitempty"`
	// Barrier changes nothing: a new active controller commits one and waits
	// for it to be applied, so that it decides on everything before it.
	Barrier *Barrier `json:"barrier,omitempty"`
}

// Bootstrap is the cluster's identity.
type Bootstrap struct {
	ClusterID string `json:"clusterId"`
}

// RegisterBroker is a broker process announcing itself.
type RegisterBroker struct {
	ID          int32     `json:"id"`
	Incarnation uuid.UUID `json:"incarnation"`
	Host        string    `json:"host"`
	Port        int32     `json:"port"`
	Rack        string    `json:"rack,omitempty"`
	// LogDir is the id of the broker's data directory, made when the
	// directory was (KIP-858's log directory ids): another id than the
	// last registration's means the disk was replaced, and the broker has
	// lost what it had.
	LogDir uuid.UUID `json:"logDir,omitempty"`
	// DurableAcks: the broker acknowledges only what it has fsynced
	// (sync=always), so an unclean shutdown on the same disk loses nothing
	// it was counted in sync for: it stays an eligible leader replica
	// across one.
	DurableAcks bool `json:"durableAcks,omitempty"`
	// CleanShutdown: the previous incarnation shut down cleanly.
	CleanShutdown bool `json:"cleanShutdown,omitempty"`
}

// BrokerRef names one incarnation of a broker.
type BrokerRef struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// CreateTopic is a new topic.
type CreateTopic struct {
	Name       string            `json:"name"`
	ID         uuid.UUID         `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`
}

// AddPartitions appends partitions to a topic.
type AddPartitions struct {
	TopicID    uuid.UUID   `json:"topicId"`
	Partitions []Partition `json:"partitions"`
}

// DeleteTopic removes a topic.
type DeleteTopic struct {
	TopicID uuid.UUID `json:"topicId"`
}

// ChangePartition is one partition's new state. Its PartitionEpoch must be
// the current one plus one, and its LeaderEpoch the current one, or the
// current one plus one exactly when the leader changes. Its replicas may
// differ from the current ones (a reassignment starting, changing,
// completing or cancelled: reassign.go).
type ChangePartition struct {
	TopicID   uuid.UUID `json:"topicId"`
	Partition int32     `json:"partition"`
	State     Partition `json:"state"`
}

// ProducerIDs gives [First, First+Count) to a broker.
type ProducerIDs struct {
	Broker      int32 `json:"broker"`
	BrokerEpoch int64 `json:"brokerEpoch"`
	First       int64 `json:"first"`
	Count       int64 `json:"count"`
}

// ConfigChange sets one config of a resource to Value, or deletes it
// (Value nil) so that the default applies again. Resources are a topic
// (ResourceType 2, kmsg.ConfigResourceTypeTopic), named and identified by
// id, so that a topic created later under the same name is never changed
// by a record meant for the old one; or the cluster-wide broker defaults
// (ResourceType 4, ResourceName ""). The value is one the controller
// validated; Apply checks it again, since partitions parse what the image
// holds.
type ConfigChange struct {
	ResourceType int8      `json:"resourceType"`
	ResourceName string    `json:"resourceName"`
	TopicID      uuid.UUID `json:"topicId,omitempty"`
	Name         string    `json:"name"`
	Value        *string   `json:"value"`
}

// Barrier is a record that changes nothing.
type Barrier struct{}

// EncodeBatch is the log entry payload of a batch of records.
func EncodeBatch(recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("cluster: empty record batch")
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode records: %w", err)
	}
	return b, nil
}

// DecodeBatch is the inverse of EncodeBatch.
func DecodeBatch(b []byte) ([]Record, error) {
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("cluster: decode records: %w", err)
	}
	for i, r := range recs {
		if n := r.fields(); n != 1 {
			return nil, fmt.Errorf("cluster: record %d of the batch sets %d kinds, want 1", i, n)
		}
	}
	return recs, nil
}

func (r Record) fields() int {
	n := 0
	for _, set := range []bool{
		r.Bootstrap != nil, r.RegisterBroker != nil, r.FenceBroker != nil,
		r.UnfenceBroker != nil, r.ShutdownBroker != nil, r.CreateTopic != nil,
		r.AddPartitions != nil, r.DeleteTopic != nil, r.ChangePartition != nil,
		r.ProducerIDs != nil, r.Barrier != nil, r.Config != nil,
	} {
		if set {
			n++
		}
	}
	return n
}
