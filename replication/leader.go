package replication

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultLagTime is replica.lag.time.max.ms's default: how long an ISR
// member may go without catching up before the leader proposes removing it.
const DefaultLagTime = 30 * time.Second

// DefaultRetryBackoff is how long a leader waits before resending an
// AlterPartition that failed with a retriable error or got no answer.
const DefaultRetryBackoff = 100 * time.Millisecond

// LeaderConfig is what a broker knows of a partition when the metadata makes
// it the leader, and the state of its local log then.
type LeaderConfig struct {
	Self int32
	// BrokerEpoch is Self's own broker epoch, sent for itself in proposals.
	BrokerEpoch    int64
	Replicas       []int32
	ISR            []int32 // committed; must hold Self
	ELR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// MinISR is min.insync.replicas; capped at len(Replicas), at least 1.
	MinISR int
	// LagTime is replica.lag.time.max.ms; 0 means DefaultLagTime.
	LagTime time.Duration
	// RetryBackoff spaces AlterPartition retries; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration

	LogStart   int64
	LogEnd     int64
	DurableEnd int64 // what the host's sync covered (LocalDurable)
	// HW is the local high-watermark checkpoint; clamped to the log, and
	// from then on it never goes back.
	HW int64
	// Epochs is the partition's cache; the Leader assigns its own epoch in
	// it at LogEnd and reads it to detect diverging followers.
	Epochs *EpochCache
	// Eligible are the brokers that may join the ISR now (see MetadataUpdate).
	Eligible []ISRMember
	Now      time.Time

	mut mutations // test-only; see mutations.go
}

// Leader is one partition as its leader sees it: the followers' durable
// positions, the ISR and its changes in flight, the high watermark. It is
// not safe for concurrent use; the shell serializes Step calls.
type Leader struct {
	self                        int32
	selfEpoch                   int64
	replicas                    []int32
	isr, elr                    []int32
	leaderEpoch, partitionEpoch int32
	minISR                      int
	lagTime, retryBackoff       time.Duration
	epochs                      *EpochCache
	// epochStart is where this leader epoch begins: a follower joins the ISR
	// only once it has everything before it, since the previous epochs'
	// acknowledged records may lie above this leader's (lagging) HW.
	epochStart                    int64
	logStart, logEnd, durable, hw int64
	followers                     []follower // replica order, Self excluded
	eligible                      []ISRMember

	// pending is the ISR change in flight, nil when none (KIP-497).
	pending *ProposeISR
	// refused: the controller refused pending without saying that no
	// earlier attempt of it was applied (a retry may have raced a commit).
	// Its members keep counting toward the HW, and nothing is proposed,
	// until newer metadata says what was committed.
	refused bool
	// retryAt is when to resend pending after a retriable error; zero when
	// no retry is due.
	retryAt time.Time
	// held is the proposal the controller found a replica of ineligible:
	// the same ISR, with the same broker epochs, is not proposed again
	// until the metadata has been refreshed (nil: nothing held).
	held []ISRMember
	seq  uint64

	mut mutations
}

// follower is the leader's view of one follower.
type follower struct {
	id int32
	// brokerEpoch is the epoch the follower last fetched with, -1 unknown.
	brokerEpoch int64
	// fetchOffset is the follower's last fetch offset: its log end, and
	// with CountDurable what it has made durable. -1 until it fetches.
	fetchOffset int64
	lastFetch   time.Time
	// lastFetchLeaderEnd is the leader's log end at the last fetch.
	lastFetchLeaderEnd int64
	lastCaughtUp       time.Time
	// logStart is the log start the follower last fetched with, -1
	// until it sends one in this leader epoch.
	logStart int64
}

// NewLeader builds the leader of a partition from cfg. The actions it
// returns come first: SaveEpochs when it assigned its epoch in the cache,
// AdvanceHW when its state already allows one (an ISR of itself alone).
func NewLeader(cfg LeaderConfig) (*Leader, []Action, error) {
	if err := checkLeaderConfig(cfg); err != nil {
		return nil, nil, err
	}
	l := &Leader{
		self: cfg.Self, selfEpoch: cfg.BrokerEpoch,
		replicas: slices.Clone(cfg.Replicas), isr: inReplicaOrder(cfg.Replicas, cfg.ISR), elr: slices.Clone(cfg.ELR),
		leaderEpoch: cfg.LeaderEpoch, partitionEpoch: cfg.PartitionEpoch,
		minISR: cfg.MinISR, lagTime: cfg.LagTime, retryBackoff: cfg.RetryBackoff,
		epochs:   cfg.Epochs,
		logStart: cfg.LogStart, logEnd: cfg.LogEnd, durable: cfg.DurableEnd,
		hw:       min(max(cfg.HW, cfg.LogStart), cfg.LogEnd),
		eligible: slices.Clone(cfg.Eligible),
		mut:      cfg.mut,
	}
	if l.lagTime <= 0 {
		l.lagTime = DefaultLagTime
	}
	if l.retryBackoff <= 0 {
		l.retryBackoff = DefaultRetryBackoff
	}
	for _, id := range l.replicas {
		if id == l.self {
			continue
		}
		f := follower{id: id, brokerEpoch: -1, fetchOffset: -1, lastFetchLeaderEnd: -1, logStart: -1}
		if slices.Contains(l.isr, id) {
			// As Kafka: an ISR member gets a full LagTime from the election
			// to show up; the others have never caught up in this epoch.
			f.lastCaughtUp = cfg.Now
		}
		l.followers = append(l.followers, f)
	}
	var acts []Action
	if l.epochs.Assign(l.leaderEpoch, l.logEnd) {
		acts = append(acts, SaveEpochs{})
	}
	if e, _ := l.epochs.Latest(); e.Epoch == l.leaderEpoch {
		l.epochStart = e.StartOffset
	}
	acts = append(acts, l.maybeAdvanceHW()...)
	return l, acts, nil
}

func checkLeaderConfig(cfg LeaderConfig) error {
	switch {
	case cfg.Epochs == nil:
		return errors.New("replication: leader without an epoch cache")
	case !slices.Contains(cfg.Replicas, cfg.Self) || !slices.Contains(cfg.ISR, cfg.Self):
		return fmt.Errorf("replication: leader %d not in replicas %v and ISR %v", cfg.Self, cfg.Replicas, cfg.ISR)
	case !(cfg.LogStart <= cfg.DurableEnd && cfg.DurableEnd <= cfg.LogEnd):
		return fmt.Errorf("replication: log start %d, durable end %d, end %d out of order", cfg.LogStart, cfg.DurableEnd, cfg.LogEnd)
	case cfg.Epochs.LatestEpoch() > cfg.LeaderEpoch:
		return fmt.Errorf("replication: the log holds epoch %d, above leader epoch %d", cfg.Epochs.LatestEpoch(), cfg.LeaderEpoch)
	}
	for i, id := range cfg.Replicas {
		if slices.Contains(cfg.Replicas[:i], id) {
			return fmt.Errorf("replication: replica %d repeated in %v", id, cfg.Replicas)
		}
	}
	for _, id := range cfg.ISR {
		if !slices.Contains(cfg.Replicas, id) {
			return fmt.Errorf("replication: ISR member %d not in replicas %v", id, cfg.Replicas)
		}
	}
	return nil
}

// Step feeds one event and returns what the shell must do, in order. It
// panics on an event a leader does not take (a programming error).
func (l *Leader) Step(ev Event) []Action {
	switch ev := ev.(type) {
	case FollowerFetch:
		return l.fetch(ev)
	case LocalAppended:
		l.logEnd = max(l.logEnd, ev.End)
		return nil
	case LocalDurable:
		l.logEnd = max(l.logEnd, ev.End)
		if ev.End <= l.durable {
			return nil
		}
		l.durable = ev.End
		return l.maybeAdvanceHW()
	case LogStartMoved:
		if ev.Start <= l.logStart {
			return nil
		}
		l.logStart = ev.Start
		if l.epochs.TruncateFromStart(ev.Start) {
			return []Action{SaveEpochs{}}
		}
		return nil
	case Tick:
		return l.tick(ev.Now)
	case AlterPartitionResult:
		return l.alterResult(ev)
	case MetadataUpdate:
		return l.metadata(ev)
	}
	panic(fmt.Sprintf("replication: a Leader does not take %T", ev))
}

// fetch answers a follower's fetch and updates what the leader knows of it.
func (l *Leader) fetch(ev FollowerFetch) []Action {
	ans := FetchAnswer{Replica: ev.Replica, From: ev.FetchOffset, To: ev.FetchOffset, LogStartOffset: l.logStart}
	f := l.follower(ev.Replica)
	switch {
	case f == nil:
		ans.Err = kerr.NotLeaderForPartition
	case CheckLeaderEpoch(ev.CurrentLeaderEpoch, l.leaderEpoch) != nil && !l.mut.has(mutNoEpochFencing):
		ans.Err = CheckLeaderEpoch(ev.CurrentLeaderEpoch, l.leaderEpoch)
	case l.staleIncarnation(f, ev.BrokerEpoch):
		// A fetch from before the follower restarted, delivered late: its
		// offset describes a disk that may be gone (KIP-903).
		ans.Err = kerr.NotLeaderForPartition
	}
	if ans.Err == nil && ev.LastFetchedEpoch >= 0 {
		// Fetch v12 (KIP-320): the follower's last epoch must end, in this
		// log, at or after its fetch offset, or their logs have parted.
		e, end := l.epochs.EndOffsetFor(ev.LastFetchedEpoch, l.logEnd)
		if e < ev.LastFetchedEpoch || ev.FetchOffset > end {
			ans.Diverging = &EpochEnd{Epoch: e, EndOffset: end}
		}
	}
	if ans.Err == nil && ans.Diverging == nil && (ev.FetchOffset < l.logStart || ev.FetchOffset > l.logEnd) {
		ans.Err = kerr.OffsetOutOfRange
	}
	if ans.Err != nil || ans.Diverging != nil {
		// A diverging follower's offset is not a position in this log: it
		// must not count toward the HW, nor keep it caught up.
		ans.HighWatermark = l.hw
		return []Action{ans}
	}
	l.updateFollower(f, ev)
	acts := []Action{nil}
	acts = append(acts, l.maybeAdvanceHW()...)
	acts = append(acts, l.maybeExpand(f)...)
	ans.To = max(ev.FetchOffset, l.logEnd)
	ans.HighWatermark = l.hw
	acts[0] = ans
	return acts
}

// staleIncarnation says a fetch carries a broker epoch older than one this
// follower already fetched with, or than its registration.
func (l *Leader) staleIncarnation(f *follower, epoch int64) bool {
	if epoch < 0 {
		return false
	}
	if epoch < f.brokerEpoch {
		return true
	}
	m, ok := l.eligibleMember(f.id)
	return ok && m.BrokerEpoch > epoch
}

// updateFollower records a fetch, with Kafka's caught-up rule measured
// against the leader's log end (what a follower can be served): a fetch at
// or past it means caught up now; a fetch at or past the end at the
// previous fetch means caught up as of that previous fetch.
func (l *Leader) updateFollower(f *follower, ev FollowerFetch) {
	switch {
	case ev.FetchOffset >= l.logEnd:
		f.lastCaughtUp = later(f.lastCaughtUp, ev.Now)
	case f.lastFetchLeaderEnd >= 0 && ev.FetchOffset >= f.lastFetchLeaderEnd:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetch)
	}
	f.lastFetchLeaderEnd = l.logEnd
	f.lastFetch = ev.Now
	f.fetchOffset = ev.FetchOffset
	if ev.BrokerEpoch >= 0 {
		f.brokerEpoch = ev.BrokerEpoch
	}
	if ev.LogStartOffset >= 0 {
		f.logStart = ev.LogStartOffset
	}
}

// LowWatermark is the lowest log start over the maximal ISR, leader
// included (-1 while a member has not fetched with one in this epoch):
// DeleteRecords answers once it reaches the offset asked for (KIP-107),
// so that any replica that may be elected has dropped what was deleted.
// Kafka takes every replica on a live broker; here, as for the HW, the
// replicas that bound it are the ISR's: a live follower outside it is not
// electable, and it takes the leader's log start at its next fetch. Like
// Kafka's, the rule leaves out the ELR (KIP-966), whose members are down:
// one elected before it fetched from a leader with the new start would
// lead with its older one.
func (l *Leader) LowWatermark() int64 {
	low := l.logStart
	for _, id := range l.hwMembers() {
		if id == l.self {
			continue
		}
		off := int64(-1)
		if f := l.follower(id); f != nil {
			off = f.logStart
		}
		low = min(low, off)
	}
	return low
}

// hwMembers are the replicas whose positions bound the HW: the maximal ISR
// of KIP-497, the committed ISR together with the members of the change in
// flight. A member being removed holds the HW until its removal commits,
// and a member being added holds it from the moment it is proposed: the
// expansion may commit at any moment after, and the joiner must then hold
// everything below the HW, since it may be elected.
func (l *Leader) hwMembers() []int32 {
	if l.pending == nil || l.mut.has(mutHwCommittedISR) {
		return l.isr
	}
	if l.mut.has(mutHwProposedISR) {
		var out []int32
		for _, m := range l.pending.NewISR {
			out = append(out, m.ID)
		}
		return out
	}
	out := slices.Clone(l.isr)
	for _, m := range l.pending.NewISR {
		if !slices.Contains(out, m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}

// maybeAdvanceHW moves the HW to the lowest durable position over the
// maximal ISR, leader included. Per KIP-966 it does not move while the
// committed ISR is below MinISR: what the HW covers must be on MinISR
// replicas, so that an eligible leader replica holds it.
func (l *Leader) maybeAdvanceHW() []Action {
	if l.underMinISR() && !l.mut.has(mutIgnoreMinISR) {
		return nil
	}
	hw := l.durable
	for _, id := range l.hwMembers() {
		if id == l.self {
			continue
		}
		off := int64(-1) // an unknown member holds the HW
		if f := l.follower(id); f != nil {
			off = f.fetchOffset
		}
		hw = min(hw, off)
	}
	if hw <= l.hw {
		return nil
	}
	l.hw = hw
	return []Action{AdvanceHW{To: hw}}
}

func (l *Leader) effectiveMinISR() int {
	return max(1, min(l.minISR, len(l.replicas)))
}

func (l *Leader) underMinISR() bool { return len(l.isr) < l.effectiveMinISR() }

// CheckProduce is the check before appending a produce: acks=all (-1) with
// the committed ISR below MinISR is refused with NOT_ENOUGH_REPLICAS.
func (l *Leader) CheckProduce(acks int16) error {
	if acks == -1 && l.underMinISR() {
		return kerr.NotEnoughReplicas
	}
	return nil
}

// AfterAppendCheck is how an acks=all batch already appended ends: ask when
// the HW passes it, and when failing its waiter. NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when the maximal ISR is below MinISR (it shrank while the batch waited);
// nil otherwise (success once the HW passed it, REQUEST_TIMED_OUT on a
// timeout).
func (l *Leader) AfterAppendCheck() error {
	if len(l.hwMembers()) < l.effectiveMinISR() {
		return kerr.NotEnoughReplicasAfterAppend
	}
	return nil
}

func (l *Leader) follower(id int32) *follower {
	for i := range l.followers {
		if l.followers[i].id == id {
			return &l.followers[i]
		}
	}
	return nil
}

func (l *Leader) eligibleMember(id int32) (ISRMember, bool) {
	for _, m := range l.eligible {
		if m.ID == id {
			return m, true
		}
	}
	return ISRMember{}, false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// inReplicaOrder is set's members in the order of replicas (the order the
// controller records an ISR in), dropping any that are not replicas.
func inReplicaOrder(replicas, set []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !slices.Contains(set, r) })
}
