package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
)

// autoCreateWait bounds an auto-creation (the controller's commit, then
// this broker's metadata catching up).
const autoCreateWait = 10 * time.Second

// partition returns topic's partition p as this broker holds it. The error
// wraps kerr.UnknownTopicOrPartition when the topic or partition does not
// exist (nothing is auto-created here: as in Kafka, only a Metadata request
// that allows it creates a topic), kerr.NotLeaderForPartition when this
// broker holds no replica of it.
func (s *Server) partition(topic string, p int32) (*partition.Partition, error) {
	img := s.store.Image()
	part, err := node.LookupPartition(s.parts, img, topic, p)
	if err == nil || !errors.Is(err, kerr.NotLeaderForPartition) {
		return part, err
	}
	if t, _ := img.Topic(topic); slices.Contains(t.Partitions[p].Replicas, s.cfg.NodeID) && s.awaitReconciled(int64(img.Offset())) {
		// The metadata places the partition here and the reconciler was
		// still opening it (a topic just created): a client told
		// NOT_LEADER_OR_FOLLOWER now would refresh its metadata, find this
		// broker named again and retry, some 10 ms or more later.
		return node.LookupPartition(s.parts, s.store.Image(), topic, p)
	}
	return nil, err
}

// reconcileWait bounds how long a request waits for the reconciler to open
// a partition the metadata already places on this broker: from the start
// of the reconciler's round, so that a long one (a restart opening
// thousands of partitions) delays each request at most once, not once per
// partition it names.
const reconcileWait = 500 * time.Millisecond

// awaitReconciled waits until the reconciler has applied the image at
// offset or a later one, unless its round began reconcileWait ago, and
// reports whether it has.
func (s *Server) awaitReconciled(offset int64) bool {
	for {
		changed := s.reconciled.changed()
		if s.reconciled.value() >= offset {
			return true
		}
		left := time.Duration(s.reconcileBegan.Load()+int64(reconcileWait)) - time.Duration(s.cfg.Clock.Now().UnixNano())
		if left <= 0 {
			return false
		}
		t := s.cfg.Clock.NewTimer(left)
		select {
		case <-changed:
			t.Stop()
		case <-t.C():
			return false
		case <-s.quit:
			t.Stop()
			return false
		}
	}
}

// leaderOf is topic's partition p when this broker leads it; otherwise the
// error wraps kerr.NotLeaderForPartition (a client refreshes its metadata)
// or kerr.UnknownTopicOrPartition.
func (s *Server) leaderOf(topic string, p int32) (*partition.Partition, error) {
	part, err := s.partition(topic, p)
	if err != nil {
		return nil, err
	}
	if r := part.Role(); !r.Local {
		return nil, fmt.Errorf("partition %s-%d is led by broker %d: %w", topic, p, r.Leader, kerr.NotLeaderForPartition)
	}
	return part, nil
}

// ensureTopic creates topic with the default partition count and
// replication factor unless it exists, and waits until this broker's
// metadata has it and holds its partitions. A concurrent creation of the
// same topic is not an error.
func (s *Server) ensureTopic(topic string) error {
	if _, ok := s.store.Image().Topic(topic); ok {
		return nil
	}
	if err := cluster.ValidTopicName(topic); err != nil {
		return err
	}
	ctx, cancel := withTimeout(context.Background(), s.cfg.Clock, autoCreateWait)
	defer cancel()
	if err := s.createTopicsVia(ctx, topic, -1, -1); err != nil {
		return fmt.Errorf("auto-create topic %q: %w", topic, err)
	}
	s.log.Info("auto-created topic", "topic", topic)
	return nil
}

// createTopicsVia asks the controller to create one topic and waits until
// this broker's metadata has it and, where it is a replica, it holds the
// partitions (the reconciler opened them).
func (s *Server) createTopicsVia(ctx context.Context, name string, partitions int32, rf int16) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(req.MaxVersion())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	r, err := s.ctlClient.request(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %w", err, kerr.RequestTimedOut)
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return fmt.Errorf("controller answered %d topics for 1: %w", len(resp.Topics), kerr.UnknownServerError)
	}
	st := resp.Topics[0]
	if err := kerr.ErrorForCode(st.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if st.ErrorMessage != nil {
			return fmt.Errorf("%s: %w", *st.ErrorMessage, err)
		}
		return err
	}
	return s.awaitTopic(ctx, name, uuid.UUID(st.TopicID))
}

// awaitTopic waits until this broker's metadata holds topic name (with id,
// unless id is nil) and the reconciler has opened the partitions it
// replicates here.
func (s *Server) awaitTopic(ctx context.Context, name string, id uuid.UUID) error {
	if err := s.await(ctx, func() bool { return s.holdsTopic(name, id) }); err != nil {
		return fmt.Errorf("topic %q created, but this broker's metadata has not caught up: %w", name, kerr.RequestTimedOut)
	}
	return nil
}

// await returns once cond holds, checked each time the reconciler has
// applied an image (the metadata, and what this broker opened for it), or
// ctx.Err().
func (s *Server) await(ctx context.Context, cond func() bool) error {
	for {
		changed := s.reconciled.changed()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.quit:
			return ErrServerClosed
		}
	}
}

func (s *Server) holdsTopic(name string, id uuid.UUID) bool {
	t, ok := s.store.Image().Topic(name)
	if !ok || (id != uuid.Nil && t.ID != id) {
		return false
	}
	for i, p := range t.Partitions {
		for _, r := range p.Replicas {
			if r != s.cfg.NodeID {
				continue
			}
			if part, err := s.parts.Partition(name, int32(i)); err != nil || part.Key().TopicID != t.ID {
				return false
			}
		}
	}
	return true
}
