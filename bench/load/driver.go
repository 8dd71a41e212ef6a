package load

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Driver is how the benchmark runner talks to a server under test: the
// one interface every workload's steps go through. Kafka implements it
// over franz-go for mini-kafka and kfake alike; the NATS JetStream peer
// (the bench/peers module, a separate binary so that this module does not
// link NATS) is to implement it behind its command line. Calls a workload
// needs beyond these (the active controller, leaders, reassignments) are
// optional capabilities, separate interfaces a driver may also implement,
// found by type assertion as database/sql/driver does.
type Driver interface {
	// CreateTopic creates a topic of partitions with replicationFactor
	// copies (-1: the server's default); an existing one with another
	// partition count is an error.
	CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16) error
	DeleteTopic(ctx context.Context, topic string) error
	// Produce and Consume run a workload's load on the driver's servers;
	// the configs' Client is the driver's.
	Produce(ctx context.Context, cfg ProduceConfig) (ProduceResult, error)
	Consume(ctx context.Context, cfg ConsumeConfig) (ConsumeResult, error)
}

// Kafka is the Driver over franz-go.
type Kafka struct{ Client }

var _ Driver = Kafka{}

// CreateTopic implements Driver.
func (k Kafka) CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16) error {
	adm, cl, err := k.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, partitions, replicationFactor, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("load: create topic %s: %w", topic, err)
	}
	return checkPartitions(ctx, adm, topic, partitions)
}

// DeleteTopic implements Driver.
func (k Kafka) DeleteTopic(ctx context.Context, topic string) error {
	adm, cl, err := k.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("load: delete topic %s: %w", topic, err)
	}
	return nil
}

// Produce implements Driver.
func (k Kafka) Produce(ctx context.Context, cfg ProduceConfig) (ProduceResult, error) {
	cfg.Client = k.Client
	return Produce(ctx, cfg)
}

// Consume implements Driver.
func (k Kafka) Consume(ctx context.Context, cfg ConsumeConfig) (ConsumeResult, error) {
	cfg.Client = k.Client
	return Consume(ctx, cfg)
}

func checkPartitions(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("load: describe topic %s: %w", topic, err)
	}
	d := td[topic]
	if d.Err != nil {
		return fmt.Errorf("load: describe topic %s: %w", topic, d.Err)
	}
	if got := int32(len(d.Partitions)); got != partitions {
		return fmt.Errorf("load: topic %s has %d partitions, want %d", topic, got, partitions)
	}
	return nil
}
