package broker

import (
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
)

// A coordinator (of consumer groups, of transactions) owns the keys that
// hash to one partition of its internal topic (a group id's Java hash,
// modulo the partition count, as Kafka computes it; a transactional id's
// the same way), and the broker that leads that partition runs it. A
// coordSet keeps one coordinator per partition of the topic this broker
// leads, opened (replaying the partition) when the leadership arrives and
// closed when it leaves; other brokers answer NOT_COORDINATOR, and
// FindCoordinator names the leader.
type coordSet[C interface{ Close() error }] struct {
	s     *Server
	topic string
	what  string // for the log
	open  func(*partition.Partition) (C, error)

	mu     sync.RWMutex
	coords map[int32]ledAt[C] // by partition led here
	count  int32              // the topic's partitions; 0 while it does not exist
	closed bool
}

// ledAt is a coordinator and the leader epoch of its partition it was
// opened at.
type ledAt[C any] struct {
	c     C
	epoch int32
}

func newCoordSet[C interface{ Close() error }](s *Server, topic, what string, open func(*partition.Partition) (C, error)) *coordSet[C] {
	return &coordSet[C]{s: s, topic: topic, what: what, open: open, coords: map[int32]ledAt[C]{}}
}

// partitionFor is the partition of key among n: Kafka's
// abs(key.hashCode()) % n, with Java's String.hashCode (UTF-16).
func partitionFor(key string, n int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return (h & 0x7fffffff) % n
}

// forKey is the coordinator of key if this broker runs it, or the error
// code to answer: NOT_COORDINATOR (another broker does),
// COORDINATOR_NOT_AVAILABLE (no leader, or no topic yet).
func (g *coordSet[C]) forKey(key string) (C, int16) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var none C
	if g.count == 0 || g.closed {
		return none, kerr.CoordinatorNotAvailable.Code
	}
	if l, ok := g.coords[partitionFor(key, g.count)]; ok {
		return l.c, 0
	}
	return none, kerr.NotCoordinator.Code
}

// forPartition is the coordinator of partition i if this broker runs it.
func (g *coordSet[C]) forPartition(i int32) (C, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	l, ok := g.coords[i]
	return l.c, ok
}

// all lists the coordinators here, by partition.
func (g *coordSet[C]) all() []C {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]C, 0, len(g.coords))
	for _, p := range slices.Sorted(maps.Keys(g.coords)) {
		out = append(out, g.coords[p].c)
	}
	return out
}

// reconcile opens the coordinators of the partitions this broker leads
// and closes the others. A partition led again at a new leader epoch gets
// a new coordinator: what the old one did not finish, the new one finds
// in the log.
func (g *coordSet[C]) reconcile(img *cluster.Metadata, lead bool) {
	t, ok := img.Topic(g.topic)
	led := map[int32]*partition.Partition{}
	if ok && lead {
		for i := range t.Partitions {
			if p, err := g.s.parts.Partition(g.topic, int32(i)); err == nil && p.Role().Local && p.Key().TopicID == t.ID {
				led[int32(i)] = p
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.count = 0
	if ok {
		g.count = int32(len(t.Partitions))
	}
	epochs := map[int32]int32{}
	for i, p := range led {
		epochs[i] = p.LeaderEpoch()
	}
	for i, l := range g.coords {
		if epoch, still := epochs[i]; !still || epoch != l.epoch {
			delete(g.coords, i)
			g.s.log.Info("no longer the "+g.what+" of a partition", "topic", g.topic, "partition", i, "leader_epoch", l.epoch)
			if err := l.c.Close(); err != nil {
				g.s.log.Warn("closing a "+g.what, "partition", i, "err", err)
			}
		}
	}
	for i, p := range led {
		if _, open := g.coords[i]; open {
			continue
		}
		c, err := g.open(p)
		if err != nil {
			g.s.log.Error("loading a "+g.what, "topic", g.topic, "partition", i, "err", err)
			continue
		}
		g.coords[i] = ledAt[C]{c, epochs[i]}
		g.s.log.Info(g.what+" of a partition", "topic", g.topic, "partition", i, "leader_epoch", epochs[i])
	}
}

func (g *coordSet[C]) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for i, l := range g.coords {
		if err := l.c.Close(); err != nil {
			g.s.log.Warn("closing a "+g.what, "partition", i, "err", err)
		}
	}
	clear(g.coords)
}
