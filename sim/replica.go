package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/replication"
)

// The partitions of a broker are the product's: one partition.Manager per
// incarnation, opened in Manual mode on the broker's crash-model disk and
// the simulated clock, so that no goroutine of its own runs. What its
// goroutines would do, the simulator does as events: a partition that asks
// for a sync (Partition.SyncWanted) gets one a few ticks later (late on a
// slow disk), Manager.Tick runs every tickPartitionsMs. A replica here is
// the driver's part only, what the broker's other goroutines hold: the
// produces waiting for their acknowledgement, whether its sync is under
// way, and the high watermark last seen, for the checkers.

const tickPartitionsMs = 50

type tp struct {
	topic uuid.UUID
	part  int32
}

func (t tp) String() string { return fmt.Sprintf("%s-%d", t.topic.String()[:8], t.part) }

func (t tp) key() partition.Key { return partition.Key{TopicID: t.topic, Index: t.part} }

type replica struct {
	b  *broker
	tp tp
	p  *partition.Partition
	hw int64 // the high watermark last observed
	// end is the log end last observed: a log start seen past it is a log
	// reset to its leader's start, which drops the producer state.
	end int64

	waiters  []*waiter
	syncBusy bool
}

// simClock is clock.Clock on the simulated time. Nothing the simulator
// runs may arm a timer on it: a timer would belong to a goroutine that
// Manual mode does not start.
type simClock struct{ s *Sim }

func (c simClock) Now() time.Time { return c.s.time() }

func (c simClock) NewTimer(time.Duration) clock.Timer {
	panic("sim: a timer armed on the simulated clock (a background loop that Manual mode should not start)")
}

func (c simClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("sim: a timer armed on the simulated clock (a background loop that Manual mode should not start)")
}

// openPartitions opens this incarnation's partition manager on what the
// disk kept: every partition's engine recovers its log, its producer state
// and checkpoints, as the broker's do.
func (b *broker) openPartitions() error {
	o := b.s.opts
	cfg := partition.Config{
		Dir: dataDir, Engine: o.partitionEngine(), Manual: true, Clock: simClock{b.s},
		EngineOptions: engine.Options{FS: b.disk.fs(), Sync: o.Sync},
		SnapshotBytes: o.SnapshotBytes,
		Replication: partition.Replication{
			ProposeISR: b.proposeISR, LagTime: lagTimeMs * time.Millisecond,
			ConfigureLeader: configureLeader(o.Mutation), ConfigureFollower: configureFollower(o.Mutation),
		},
	}
	mutatePartitions(&cfg, o.Mutation)
	m, err := partition.OpenManager(cfg)
	if err != nil {
		return err
	}
	b.parts = m
	b.replicas = map[tp]*replica{}
	return nil
}

func newReplica(b *broker, k tp, p *partition.Partition) *replica {
	return &replica{b: b, tp: k, p: p, hw: p.HighWatermark(), end: p.EndOffset()}
}

// current reports whether r is still the broker's replica of its
// partition (events of a removed or earlier one are void).
func (r *replica) current() bool { return r.b.up && r.b.replicas[r.tp] == r }

// role is r's partition's role; nobody's for no replica.
func (r *replica) role() partition.Role {
	if r == nil {
		return partition.Role{Leader: -1}
	}
	return r.p.Role()
}

// observe hands what the partition did to the checkers: a high watermark
// that moved up (the batches it passed are committed), or went back (a
// truncation below it: never, under sync=always).
func (r *replica) observe() {
	from, to := r.hw, r.p.HighWatermark()
	r.hw = to
	r.b.s.checks.hwObserved(r, from, to)
	if start := r.p.StartOffset(); start > r.end {
		r.b.s.checks.dups.stateDropped(r.tp, start)
	}
	r.end = r.p.EndOffset()
}

// settle does, after an event at this broker, what its goroutines would do
// on the partitions' notifications: syncs asked for are scheduled,
// acknowledged produces answered, parked fetches that can go answered,
// fetchers fetch.
func (b *broker) settle() {
	for _, r := range sortedReplicas(b.replicas) {
		if !b.up {
			return
		}
		r.observe()
		r.requestSync()
		r.resolveWaiters()
	}
	if !b.up {
		return
	}
	b.resolveMarkerWaits()
	b.settleTxns()
	b.settleGroups()
	for _, r := range sortedReplicas(b.replicas) {
		if !b.up {
			return
		}
		r.requestSync() // the coordinators' appends
	}
	b.wakeParked()
	for _, fs := range b.sortedSessions() {
		if !b.up {
			return
		}
		fs.step()
	}
}

// requestSync schedules the Sync the partition asked for; its completion is
// the sync's. A slow disk completes it late.
func (r *replica) requestSync() {
	if r.syncBusy || !r.p.SyncWanted() {
		return
	}
	r.syncBusy = true
	delay := 1 + r.b.rng.Int64N(3)
	if r.b.slowSync {
		delay = 50 + r.b.rng.Int64N(300)
	}
	r.b.later(delay, "sync", func() {
		r.syncBusy = false
		if !r.current() {
			return
		}
		if !r.p.Sync() {
			r.b.crash(fmt.Sprintf("%s: the log sync failed", r.tp))
			return
		}
		r.b.settle()
	})
}

// storedBatches are the batches of log from the one holding from to the
// last that ends at or below to, as stored.
func storedBatches(log logReader, from, to int64) []engine.Batch {
	var out []engine.Batch
	for off := max(from, log.StartOffset()); off < min(to, log.EndOffset()); {
		bs, err := log.ReadLog(off, fetchMaxBytes)
		if err != nil || len(bs) == 0 {
			break
		}
		for _, bt := range bs {
			if bt.NextOffset() > to {
				return out
			}
			out = append(out, bt)
		}
		off = bs[len(bs)-1].NextOffset()
	}
	return out
}

// info is what the state machines need of a batch's header.
func info(data []byte) replication.BatchInfo {
	h, err := batch.Parse(data)
	if err != nil {
		return replication.BatchInfo{Corrupt: true}
	}
	return replication.BatchInfo{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch}
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
