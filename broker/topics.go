package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/partition"
)

// partition returns topic's partition p. An unknown topic is created first
// (with the default partition count) when create is set and auto-creation is
// on; otherwise the error wraps kerr.UnknownTopicOrPartition.
func (s *Server) partition(topic string, p int32, create bool) (*partition.Partition, error) {
	if create && s.cfg.AutoCreate {
		if err := s.ensureTopic(topic); err != nil {
			return nil, err
		}
	}
	return s.parts.Partition(topic, p)
}

// ensureTopic creates topic with the default partition count unless it
// exists. A concurrent creation of the same topic is not an error.
func (s *Server) ensureTopic(topic string) error {
	if _, ok := s.parts.Topic(topic); ok {
		return nil
	}
	_, err := s.parts.CreateTopic(topic, s.cfg.DefaultPartitions, nil)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("auto-create topic %q: %w", topic, err)
	}
	if err == nil {
		s.log.Info("auto-created topic", "topic", topic, "partitions", s.cfg.DefaultPartitions)
	}
	return nil
}
