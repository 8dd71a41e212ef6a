package replication

import (
	"slices"
	"time"
)

// LeaderStatus is a read-only snapshot of a Leader, for the shell (Fetch
// and Metadata responses), metrics and the simulator's checkers.
type LeaderStatus struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	HW             int64
	LogStart       int64
	LogEnd         int64
	DurableEnd     int64
	// EpochStart is where this leader epoch begins in the log.
	EpochStart int64
	// ISR is the committed ISR; MaximalISR adds the members of the change in
	// flight: the replicas that bound the HW.
	ISR        []int32
	MaximalISR []int32
	ELR        []int32
	// Pending is the ISR change in flight, nil when none. PendingRefused: the
	// controller refused it; it is no longer sent, and waits for metadata.
	Pending         *ProposeISR
	PendingRefused  bool
	Followers       []FollowerProgress
	UnderReplicated bool // ISR smaller than the replicas
	UnderMinISR     bool // ISR smaller than MinISR: acks=all is refused, the HW frozen
	// LowWatermark is Leader.LowWatermark.
	LowWatermark int64
}

// FollowerProgress is the leader's view of one follower.
type FollowerProgress struct {
	ID          int32
	BrokerEpoch int64 // as last fetched with, -1 unknown
	FetchOffset int64 // -1 until it fetches in this leader epoch
	// LogStart is the log start it last fetched with, -1 until known.
	LogStart int64
	InISR    bool
	// LagOffsets is how far the follower is behind the leader's durable end.
	LagOffsets int64
	// TimeLag is how long since the follower was last caught up.
	TimeLag      time.Duration
	LastFetch    time.Time
	LastCaughtUp time.Time
}

// Status is a snapshot of the leader as of now (for the time lags).
func (l *Leader) Status(now time.Time) LeaderStatus {
	s := LeaderStatus{
		LeaderEpoch: l.leaderEpoch, PartitionEpoch: l.partitionEpoch,
		HW: l.hw, LogStart: l.logStart, LogEnd: l.logEnd, DurableEnd: l.durable, EpochStart: l.epochStart,
		ISR: slices.Clone(l.isr), MaximalISR: inReplicaOrder(l.replicas, l.hwMembers()), ELR: slices.Clone(l.elr),
		PendingRefused:  l.refused,
		UnderReplicated: len(l.isr) < len(l.replicas),
		UnderMinISR:     l.underMinISR(),
		LowWatermark:    l.LowWatermark(),
	}
	if l.pending != nil {
		p := l.pending.clone()
		s.Pending = &p
	}
	for _, f := range l.followers {
		fs := FollowerProgress{
			ID: f.id, BrokerEpoch: f.brokerEpoch, FetchOffset: f.fetchOffset, LogStart: f.logStart, InISR: slices.Contains(l.isr, f.id),
			LagOffsets: l.durable - max(f.fetchOffset, l.logStart), TimeLag: now.Sub(f.lastCaughtUp),
			LastFetch: f.lastFetch, LastCaughtUp: f.lastCaughtUp,
		}
		if fs.LagOffsets < 0 {
			fs.LagOffsets = 0
		}
		s.Followers = append(s.Followers, fs)
	}
	return s
}

// HW is the high watermark.
func (l *Leader) HW() int64 { return l.hw }

// LogStart is the leader's log start, as its fetch answers give it.
func (l *Leader) LogStart() int64 { return l.logStart }

// ISR is the committed ISR.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// LeaderEpoch is the epoch this Leader leads.
func (l *Leader) LeaderEpoch() int32 { return l.leaderEpoch }
