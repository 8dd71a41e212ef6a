package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/cluster"
)

// Consumer groups: each group belongs to one partition of the internal
// __consumer_offsets topic (its id's Java hash, modulo the partition count,
// as Kafka computes it), and the broker that leads that partition is its
// coordinator. groupSet keeps one group.Coordinator (package group) per
// partition this broker leads, opened (replaying the partition) when the
// leadership arrives and closed when it leaves; other brokers answer
// NOT_COORDINATOR, and FindCoordinator names the leader. The topic is
// created on the first FindCoordinator, with OffsetsTopicPartitions
// partitions replicated over up to OffsetsTopicReplicationFactor brokers.
// The group APIs (08, 09, 10, 11-16, 42) find their coordinator through
// s.groups.

const offsetsTopic = cluster.OffsetsTopic

type groupSet = coordSet[*group.Coordinator]

func newGroupSet(s *Server) *groupSet {
	return newCoordSet(s, offsetsTopic, "group coordinator", s.openCoordinator)
}

// openCoordinator loads the coordinator of one __consumer_offsets partition.
func (s *Server) openCoordinator(p *partition.Partition) (*group.Coordinator, error) {
	c, err := group.Open(group.Config{
		Log:    coordLog{p, s.cfg.Clock},
		Clock:  s.cfg.Clock,
		Logger: s.log.With("component", "groups", "partition", p.Index()),
		PartitionExists: func(topic string, part int32) bool {
			t, ok := s.store.Image().Topic(topic)
			return ok && part >= 0 && int(part) < len(t.Partitions)
		},
		MinSessionTimeout:     s.cfg.Groups.MinSessionTimeout,
		MaxSessionTimeout:     s.cfg.Groups.MaxSessionTimeout,
		InitialRebalanceDelay: s.cfg.Groups.InitialRebalanceDelay,
		MaxMembers:            s.cfg.Groups.MaxMembers,
		OffsetsRetention:      s.cfg.Groups.OffsetsRetention,
		CompactMinBytes:       s.cfg.Groups.OffsetsCompactMinBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer groups: %w", err)
	}
	return c, nil
}

// ensureOffsetsTopic asks the controller to create __consumer_offsets
// unless the metadata has it.
func (s *Server) ensureOffsetsTopic(ctx context.Context) error {
	return s.ensureInternalTopic(ctx, offsetsTopic, s.cfg.Cluster.OffsetsTopicPartitions, s.cfg.Cluster.OffsetsTopicReplicationFactor)
}

// ensureInternalTopic asks the controller to create internal topic name
// unless the metadata has it, with its replication factor (Kafka's
// offsets.topic.replication.factor, say) lowered to the brokers the
// cluster has: at least its voters, so that a cluster whose brokers are
// still starting waits for them (COORDINATOR_NOT_AVAILABLE, retried)
// rather than keeping the topic on fewer replicas for good; a one-node
// cluster gets one replica.
func (s *Server) ensureInternalTopic(ctx context.Context, name string, partitions int32, rf int16) error {
	if _, ok := s.store.Image().Topic(name); ok {
		return nil
	}
	brokers := max(len(s.cfg.voters()), len(s.store.Image().ActiveBrokers()))
	return s.createTopicsVia(ctx, name, partitions, int16(max(min(int(rf), brokers), 1)))
}

// validGroupID is the group package's rule on group ids.
func validGroupID(id string, allowEmpty bool) bool {
	return len(id) <= group.DefaultMaxGroupIDBytes && (allowEmpty || id != "")
}

// coordLog is a coordinator's view of its internal partition
// (coordlog.Log): the group coordinator's, the transaction coordinator's.
type coordLog struct {
	p     *partition.Partition
	clock clock.Clock
}

// offsetsCommitTimeout bounds how long a coordinator's write waits to be
// replicated, as Kafka's offsets.commit.timeout.ms does (5 s by default):
// past it the client gets COORDINATOR_NOT_AVAILABLE and retries, where it
// would otherwise wait until a lagging ISR member is dropped. As in Kafka,
// the write stays in the log and may yet commit.
const offsetsCommitTimeout = 5 * time.Second

// Append appends a batch the coordinator built (partition.AppendOwn: a
// group's offsets in a transaction are the broker's own transactional
// batches).
func (l coordLog) Append(batch []byte) (int64, error) {
	return l.p.AppendOwn(batch)
}

// WaitDurable is, for the coordinator's writes, what acks=all is for a
// producer's: the batch is below the high watermark, on every ISR member
// (on the disk of min.insync.replicas brokers under sync=always). Kafka
// writes offsets and group metadata the same way; acknowledged on the
// leader's disk alone, a commit would go back when leadership moved to a
// follower that had not fetched it yet.
func (l coordLog) WaitDurable(ctx context.Context, end int64) error {
	wctx, cancel := withTimeout(ctx, l.clock, offsetsCommitTimeout)
	defer cancel()
	err := l.p.WaitHighWatermark(wctx, end)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errTimedOut) {
		return fmt.Errorf("not replicated to every ISR member within offsets.commit.timeout.ms (%v): %w", offsetsCommitTimeout, kerr.RequestTimedOut)
	}
	return err
}

// Read reads to the log end (Partition.ReadToEnd).
func (l coordLog) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.p.ReadToEnd(offset, maxBytes)
}

func (l coordLog) StartOffset() int64 { return l.p.StartOffset() }

// DeleteBefore moves the log start (the coordinator's compaction). The
// coordinator has waited (WaitDurable) until offset is below the high
// watermark, above which the partition never deletes.
func (l coordLog) DeleteBefore(ctx context.Context, offset int64) error {
	if err := l.p.WaitHighWatermark(ctx, offset); err != nil {
		return err
	}
	_, err := l.p.DeleteBefore(offset)
	return err
}

// clientOf is who sent r, as DescribeGroups shows members: the client id
// and "/host", as Kafka writes it.
func clientOf(r *request) group.Client {
	host := r.c.remote
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return group.Client{ID: r.hdr.clientID, Host: "/" + host}
}

// untilQuit is ctx, also ended when the server starts closing: a request
// parked in the group coordinator (a JoinGroup waiting for a rebalance)
// answers at once instead of holding the shutdown for its grace period.
func (s *Server) untilQuit(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
