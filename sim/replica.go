package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/replication"
)

// A replica is one partition on one broker: its log on the crash-model
// disk, the epoch cache and high watermark checkpoints beside it, the
// idempotent producers' state (rebuilt from the log, as Kafka does), and
// the replication state machine of its role, fed the events a broker's
// shell feeds it: fetches, syncs, ticks, metadata.

type tp struct {
	topic uuid.UUID
	part  int32
}

func (t tp) String() string { return fmt.Sprintf("%s-%d", t.topic.String()[:8], t.part) }

type replica struct {
	b      *broker
	tp     tp
	name   string
	dir    string
	log    *crashLog
	epochs *replication.EpochCache
	hw     int64
	pstate *producer.State
	closed bool

	leader      *replication.Leader
	follower    *replication.Follower
	leaderID    int32
	leaderEpoch int32 // of the role, -1 before any
	durable     int64
	minISR      int

	waiters   []*waiter
	parked    []*parkedFetch
	syncBusy  bool
	fetchBusy bool
	role      int   // bumped at every change of role: answers to an older one are void
	backoff   int64 // no fetch before this tick
}

func openReplica(b *broker, t tp, name string) *replica {
	dir := fmt.Sprintf("/data/%s", t)
	r := &replica{b: b, tp: t, name: name, dir: dir, leaderEpoch: -1}
	r.log = b.disk.open(dir)
	r.log.partition = true
	r.durable = r.log.durableEnd()
	if raw, ok := b.disk.files[dir+"/epochs"]; ok {
		if c, err := replication.UnmarshalEpochCache(raw); err == nil {
			r.epochs = c
		}
	}
	if r.epochs == nil {
		r.epochs = replication.RebuildEpochCache(func(yield func(replication.BatchInfo) bool) {
			for _, bt := range r.log.l.batches {
				if !yield(info(bt.Data)) {
					return
				}
			}
		})
	}
	r.epochs.TruncateFromEnd(r.log.EndOffset())
	r.epochs.TruncateFromStart(r.log.StartOffset())
	if raw, ok := b.disk.files[dir+"/hw"]; ok && len(raw) == 8 {
		r.hw = int64(beUint64(raw))
	}
	r.hw = min(max(r.hw, r.log.StartOffset()), r.log.EndOffset())
	r.rebuildProducers()
	return r
}

// info is what the state machines need of a batch's header.
func info(data []byte) replication.BatchInfo {
	h, err := batch.Parse(data)
	if err != nil {
		return replication.BatchInfo{Corrupt: true}
	}
	return replication.BatchInfo{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch}
}

// rebuildProducers replays the log's batch headers into the producer state.
func (r *replica) rebuildProducers() {
	r.pstate = producer.NewState()
	for _, bt := range r.log.l.batches {
		if h, err := batch.Parse(bt.Data); err == nil {
			r.pstate.Record(h, h.BaseOffset, r.b.s.now)
		}
	}
}

func (r *replica) close() {
	r.dropRole(kerr.NotLeaderForPartition)
	r.closed = true
}

// dropRole ends the current role: waiting producers and parked fetches are
// answered with err.
func (r *replica) dropRole(err error) {
	for _, w := range r.waiters {
		w.reply(produceResp{err: err})
	}
	for _, p := range r.parked {
		p.reply(fetchResp{err: err})
	}
	r.waiters, r.parked = nil, nil
	r.leader, r.follower = nil, nil
	r.fetchBusy = false
	r.role++
	r.leaderID = cluster.NoLeader
}

func (r *replica) saveEpochs() { r.b.disk.files[r.dir+"/epochs"] = r.epochs.Marshal() }

func (r *replica) setHW(to int64) {
	if to <= r.hw {
		return
	}
	from := r.hw
	r.hw = to
	r.b.disk.files[r.dir+"/hw"] = beBytes(uint64(to))
	r.b.s.checks.hwAdvanced(r, from, to)
	r.resolveWaiters()
}

// becomeLeader builds a Leader for p, led by this broker.
func (r *replica) becomeLeader(img *cluster.Metadata, t *cluster.Topic, p cluster.Partition) {
	r.dropRole(kerr.NotLeaderForPartition)
	s := r.b.s
	r.minISR = r.b.core.Settings().MinISR(t)
	cfg := replication.LeaderConfig{
		Self: r.b.id, BrokerEpoch: r.b.epoch, Replicas: p.Replicas, ISR: p.ISR, ELR: p.ELR,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, MinISR: r.minISR,
		LagTime: lagTimeMs * time.Millisecond, RetryBackoff: 100 * time.Millisecond,
		LogStart: r.log.StartOffset(), LogEnd: r.log.EndOffset(), DurableEnd: r.durable, HW: r.hw,
		Epochs: r.epochs, Eligible: eligible(img), Now: s.time(),
	}
	mutateLeader(&cfg, s.opts.Mutation)
	l, acts, err := replication.NewLeader(cfg)
	if err != nil {
		s.violate("replication", "b%d %s: NewLeader: %v", r.b.id, r.tp, err)
		return
	}
	s.tracef("b%d leads %s epoch %d isr %v elr %v end %d hw %d", r.b.id, r.tp, p.LeaderEpoch, p.ISR, p.ELR, r.log.EndOffset(), r.hw)
	r.leader, r.leaderID, r.leaderEpoch = l, r.b.id, p.LeaderEpoch
	s.checks.leaderElected(r, p)
	r.leaderActions(l, acts)
}

// becomeFollower builds a Follower of p's leader (none: the replica waits).
func (r *replica) becomeFollower(p cluster.Partition) {
	r.dropRole(kerr.NotLeaderForPartition)
	r.leaderID, r.leaderEpoch = p.Leader, p.LeaderEpoch
	if p.Leader == cluster.NoLeader {
		return
	}
	cfg := replication.FollowerConfig{
		Self: r.b.id, BrokerEpoch: r.b.epoch, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, SyncAlways: true,
		LogStart: r.log.StartOffset(), LogEnd: r.log.EndOffset(), DurableEnd: r.durable, HW: r.hw, Epochs: r.epochs,
	}
	mutateFollower(&cfg, r.b.s.opts.Mutation)
	f, acts, err := replication.NewFollower(cfg)
	if err != nil {
		r.b.s.violate("replication", "b%d %s: NewFollower: %v", r.b.id, r.tp, err)
		return
	}
	r.follower = f
	r.followerActions(f, acts, nil)
	r.maybeFetch()
}

// eligible are the brokers that may join an ISR, with their epochs.
func eligible(img *cluster.Metadata) []replication.ISRMember {
	var out []replication.ISRMember
	for _, b := range img.ActiveBrokers() {
		out = append(out, replication.ISRMember{ID: b.ID, BrokerEpoch: b.Epoch})
	}
	return out
}

func (r *replica) tick() {
	if r.leader != nil {
		r.leaderActions(r.leader, r.leader.Step(replication.Tick{Now: r.b.s.time()}))
	}
	r.maybeFetch()
}

// requestSync schedules the fsync of what is appended; its completion is
// LocalDurable. A slow disk completes it late.
func (r *replica) requestSync() {
	if r.syncBusy || r.closed {
		return
	}
	r.syncBusy = true
	delay := 1 + r.b.rng.Int64N(3)
	if r.b.slowSync {
		delay = 50 + r.b.rng.Int64N(300)
	}
	r.b.later(delay, "sync", func() {
		r.syncBusy = false
		if r.closed {
			return
		}
		target := r.log.EndOffset()
		if err := r.log.Sync(context.Background(), target); err != nil {
			r.b.crash(fmt.Sprintf("%s: sync: %v", r.tp, err))
			return
		}
		r.durable = r.log.durableEnd()
		if r.leader != nil {
			r.leaderActions(r.leader, r.leader.Step(replication.LocalDurable{End: r.durable}))
			r.resolveWaiters()
			r.wakeParked()
		}
		if r.follower != nil {
			r.follower.Step(replication.LocalDurable{End: r.durable})
			r.maybeFetch()
		}
		if r.log.EndOffset() > r.durable {
			r.requestSync()
		}
	})
}

// leaderActions performs a Leader's actions (a FetchAnswer is its caller's).
func (r *replica) leaderActions(l *replication.Leader, acts []replication.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case replication.AdvanceHW:
			r.setHW(a.To)
		case replication.SaveEpochs:
			r.saveEpochs()
		case replication.ProposeISR:
			r.alterPartition(l, a)
		}
	}
}

// followerActions performs a Follower's actions; data holds the fetched
// batches' bytes by base offset.
func (r *replica) followerActions(f *replication.Follower, acts []replication.Action, data map[int64][]byte) {
	s := r.b.s
	for _, a := range acts {
		switch a := a.(type) {
		case replication.Append:
			for _, bi := range a.Batches {
				err := r.log.Append(engine.Batch{BaseOffset: bi.BaseOffset, Records: int32(bi.NextOffset() - bi.BaseOffset), Data: data[bi.BaseOffset]})
				if err != nil {
					// The follower counted the append: rebuild it from the log.
					s.tracef("b%d %s: append refused: %v", r.b.id, r.tp, err)
					r.dropRole(kerr.KafkaStorageError)
					r.b.reconcileSoon()
					return
				}
				if h, err := batch.Parse(data[bi.BaseOffset]); err == nil {
					r.pstate.Record(h, bi.BaseOffset, s.now)
				}
			}
			r.requestSync()
		case replication.Truncate:
			s.checks.truncated(r, a.To)
			if err := r.log.Truncate(a.To); err != nil {
				s.violate("replication", "b%d %s: truncate to %d: %v", r.b.id, r.tp, a.To, err)
				return
			}
			r.durable = min(r.durable, r.log.EndOffset())
			r.hw = min(r.hw, a.To)
			r.rebuildProducers()
		case replication.ResetLog:
			s.checks.truncated(r, a.Start)
			_ = r.log.DeleteBefore(a.Start)
			if r.log.EndOffset() > a.Start {
				_ = r.log.Truncate(a.Start)
			}
			r.durable = r.log.EndOffset()
			r.rebuildProducers()
		case replication.DeleteBefore:
			_ = r.log.DeleteBefore(a.Offset)
		case replication.AdvanceHW:
			r.setHW(a.To)
		case replication.SaveEpochs:
			r.saveEpochs()
		case replication.Backoff:
			r.backoff = s.now + 50
		case replication.NeedMetadata:
		}
	}
}

// reconcileSoon rebuilds the roles from the image on the next event.
func (b *broker) reconcileSoon() {
	b.later(1, "reconcile", func() { b.applied = 0; b.reconcile() })
}

func sortedReplicas(m map[tp]*replica) []*replica {
	out := make([]*replica, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *replica) int {
		if c := slices.Compare(a.tp.topic[:], b.tp.topic[:]); c != 0 {
			return c
		}
		return int(a.tp.part - b.tp.part)
	})
	return out
}

func beBytes(v uint64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
	return b
}

func beUint64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v = v<<8 | uint64(b[i])
	}
	return v
}
