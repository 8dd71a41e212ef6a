package broker

import (
	"context"
	"fmt"
	"net"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/partition"
)

// The consumer group coordinator (package group) plugs into the server as
// the "groups" extension, configured by Config.Groups: it keeps committed
// offsets and group metadata in partition 0 of the internal
// __consumer_offsets topic, created with one partition on first start,
// replays it when the server opens, and compacts it (moving its log start
// with Partition.DeleteBefore). The group APIs (08, 09, 10, 11-16, 42) call
// it through s.groups().

func init() { registerExtension(groupsExtension, openGroups) }

const (
	groupsExtension = "groups"
	offsetsTopic    = "__consumer_offsets"
)

// groups is the server's group coordinator.
func (s *Server) groups() *group.Coordinator {
	return s.extension(groupsExtension).(*group.Coordinator)
}

func openGroups(s *Server) (any, error) {
	if err := s.ensureOffsetsTopic(); err != nil {
		return nil, err
	}
	p, err := s.parts.Partition(offsetsTopic, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", offsetsTopic, err)
	}
	c, err := group.Open(group.Config{
		Log:    offsetsLog{p},
		Clock:  s.cfg.Clock,
		Logger: s.log.With("component", "groups"),
		PartitionExists: func(topic string, part int32) bool {
			info, ok := s.parts.Topic(topic)
			return ok && part >= 0 && part < info.Partitions
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

// ensureOffsetsTopic creates __consumer_offsets with one partition unless it
// exists (a single broker needs no more; group ids would be hashed over
// more partitions once there are several brokers).
func (s *Server) ensureOffsetsTopic() error {
	if _, ok := s.parts.Topic(offsetsTopic); ok {
		return nil
	}
	if _, err := s.parts.CreateTopic(offsetsTopic, 1, nil); err != nil {
		return fmt.Errorf("create %s: %w", offsetsTopic, err)
	}
	return nil
}

// offsetsLog is the group coordinator's view of a partition (group.Log).
type offsetsLog struct{ p *partition.Partition }

func (l offsetsLog) Append(batch []byte) (int64, error) {
	a, err := l.p.Append(batch)
	if err != nil {
		return 0, err
	}
	return a.LastOffset + 1, nil
}

func (l offsetsLog) WaitDurable(ctx context.Context, end int64) error {
	return l.p.WaitDurable(ctx, end)
}

func (l offsetsLog) Read(offset int64, maxBytes int) ([]byte, error) {
	rd, err := l.p.Read(offset, maxBytes)
	return rd.Records, err
}

func (l offsetsLog) StartOffset() int64 { return l.p.StartOffset() }

// DeleteBefore moves the log start (the coordinator's compaction). The
// coordinator has waited until offset is durable; under sync=always the
// high watermark follows the durable end a moment later, and the partition
// never deletes above it.
func (l offsetsLog) DeleteBefore(ctx context.Context, offset int64) error {
	if err := l.p.WaitHighWatermark(ctx, offset); err != nil {
		return err
	}
	return l.p.DeleteBefore(offset)
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
