package node

import (
	"errors"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/replication"
)

// Followers fetch from their leaders with Kafka's Fetch (v15: ReplicaState
// carries this broker's id and epoch), one Fetcher per leader broker for
// every partition this broker follows there, as Kafka's replica fetcher
// threads. A fetcher asks each partition's Follower what to fetch
// (Partition.NextFetch: nothing while what it appended is not synced under
// sync=always), builds one Fetch for all of them, and hands each
// partition its answer (Partition.HandleFetch). A partition added (or
// given a new role) while a long poll is in flight interrupts it, polls
// stay short for a while after a burst of additions, and a long poll lasts
// no longer than the nearest end of a partition's backoff: a partition
// created a moment after the fetcher's last request must not wait out the
// others' long poll before its first fetch (acks=all on a new topic would
// take up to a second).
//
// The driver of a fetcher loops: Build; nothing to send, wait up to
// IdlePause or a wake; otherwise BeginFlight, send, EndFlight, Handle, and
// wait (up to SyncAwait) for the syncs of what the answer appended.

const (
	// ReplicaFetchWait is the follower's long poll (replica.fetch.wait.max.ms).
	ReplicaFetchWait = 500 * time.Millisecond
	// ReplicaFetchBackoff is replica.fetch.backoff.ms.
	ReplicaFetchBackoff = 100 * time.Millisecond
	// metadataLagBackoff is the shorter backoff after an error that says
	// the leader has not yet applied the metadata this follower acts on
	// (a partition just created or just moved, a leader epoch it does not
	// know yet): it catches up within milliseconds, and a new topic's
	// acks=all produce waits for this follower's first fetch.
	metadataLagBackoff = 10 * time.Millisecond
	// replicaFetchBytes bounds a partition's share of a fetch
	// (replica.fetch.max.bytes) and replicaFetchResponseBytes the whole
	// response (replica.fetch.response.max.bytes).
	replicaFetchBytes         = 1 << 20
	replicaFetchResponseBytes = 10 << 20
	// SyncPoll is how often a fetcher with nothing to send looks again:
	// its partitions are waiting for their own syncs.
	SyncPoll = 2 * time.Millisecond
	// A partition added while a long poll is in flight interrupts it, up to
	// maxInterrupts a second. More additions than that are a burst (a
	// broker opening thousands of partitions at start, topics created
	// faster than that): the poll in flight is cut once more, and for
	// addBurst after, polls last at most addBurstWait, which takes each
	// partition in within milliseconds without an interrupt. Short polls
	// are not the rule because every poll names every partition of the
	// fetcher.
	maxInterrupts = 20
	addBurstWait  = 10 * time.Millisecond
	addBurst      = time.Second
	// syncPendingWait bounds the long poll while a partition left out of
	// it waits for its sync (sync=always): once synced it fetches again,
	// and its leader's high watermark waits for that fetch.
	syncPendingWait = 5 * time.Millisecond
	// SyncAwait bounds how long a driver waits for the syncs of what it
	// just appended before fetching again (a slow or stuck disk must not
	// stop the partitions that have nothing to sync). The syncs run at once
	// on the partitions' own loops, so this waits about one fsync; fetching
	// without them would leave them out of the next long poll, and their
	// acks=all producers waiting for it to end.
	SyncAwait = 100 * time.Millisecond
	// FetchTimeoutSlack is how much longer than its long poll a driver
	// waits for a fetch's answer.
	FetchTimeoutSlack = 5 * time.Second
	// ThrottlePoll is how often a fetcher whose every partition is held by
	// the follower throttle looks again: the quota's window moves on in
	// steps of a tenth of a second.
	ThrottlePoll = 50 * time.Millisecond
)

// FollowerThrottle is the follower side of a replication throttle
// (follower.replication.throttled.rate): partitions for which Throttled
// is true (listed for this broker and out of the ISR) are left out of a
// fetch while Quota is exceeded, and what they fetch counts toward it.
// Partitions in the ISR are never throttled: acknowledgements wait for
// them; nor is one that has caught up with its leader's high watermark,
// which is about to join the ISR.
type FollowerThrottle struct {
	Quota     *Quota
	Throttled func(partition.Key) bool
}

// Fetchers are a broker's replica fetchers, by leader. Safe for
// concurrent use.
type Fetchers struct {
	self     int32
	throttle *FollowerThrottle

	mu       sync.Mutex
	byLeader map[int32]*Fetcher
	leaderOf map[partition.Key]int32
	closed   bool
}

// NewFetchers returns the fetchers of broker self, none yet.
func NewFetchers(self int32) *Fetchers {
	return &Fetchers{self: self, byLeader: map[int32]*Fetcher{}, leaderOf: map[partition.Key]int32{}}
}

// SetThrottle makes every fetcher, present and future, apply t. Call it
// before the first Follow.
func (fs *Fetchers) SetThrottle(t *FollowerThrottle) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.throttle = t
}

// Follow makes p fetch from leader, or from nobody when leader is this
// broker or none (-1). It returns the fetcher it started, which the driver
// runs, and the one it left with nothing to fetch, which the driver stops.
func (fs *Fetchers) Follow(now time.Time, p *partition.Partition, leader int32) (started, stopped *Fetcher) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return nil, nil
	}
	k := p.Key()
	if old, ok := fs.leaderOf[k]; ok {
		if old == leader {
			fs.byLeader[leader].wakeUp() // a new role, the same leader
			return nil, nil
		}
		f := fs.byLeader[old]
		if f.remove(k) {
			delete(fs.byLeader, old)
			stopped = f
		}
		delete(fs.leaderOf, k)
	}
	if leader < 0 || leader == fs.self {
		return nil, stopped
	}
	f, ok := fs.byLeader[leader]
	if !ok {
		f = newFetcher(fs.self, leader)
		f.throttle = fs.throttle
		fs.byLeader[leader] = f
		started = f
	}
	f.add(now, p)
	fs.leaderOf[k] = leader
	return started, stopped
}

// Unfollow stops fetching partition k (removed from this broker); it
// returns the fetcher it left with nothing to fetch, for the driver to stop.
func (fs *Fetchers) Unfollow(k partition.Key) (stopped *Fetcher) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	old, ok := fs.leaderOf[k]
	if !ok || fs.closed {
		return nil
	}
	delete(fs.leaderOf, k)
	if f := fs.byLeader[old]; f != nil && f.remove(k) {
		delete(fs.byLeader, old)
		return f
	}
	return nil
}

// Close stops following: it returns every fetcher, for the driver to stop.
func (fs *Fetchers) Close() []*Fetcher {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.closed = true
	var all []*Fetcher
	for _, f := range fs.byLeader {
		all = append(all, f)
	}
	fs.byLeader = map[int32]*Fetcher{}
	fs.leaderOf = map[partition.Key]int32{}
	return all
}

// Fetcher fetches every partition this broker follows on one leader. Safe
// for concurrent use: the reconciler adds and removes partitions while the
// driver fetches.
type Fetcher struct {
	self, leader int32
	throttle     *FollowerThrottle // nil: none

	mu    sync.Mutex
	parts map[partition.Key]*partition.Partition
	// notBefore holds partitions back after an error, until that time.
	notBefore map[partition.Key]time.Time
	wake      func()
	// changed says a partition was added since the last build; interrupt
	// ends the fetch in flight, if any, and interrupted says it did.
	changed     bool
	interrupt   func()
	interrupted bool
	inFlightFor time.Duration // the long poll of the fetch in flight
	// afterInterrupt: the last fetch was interrupted. franz-go ends the
	// connection of a cancelled request, so the fetch after it may fail
	// on it too: neither waits out a backoff.
	afterInterrupt bool
	// interrupts counts the interrupts since windowStart; lastBurst is
	// when additions last came faster than maxInterrupts a second.
	interrupts  int
	windowStart time.Time
	lastBurst   time.Time
	// heldByThrottle: the last Build left a partition out for the throttle
	// and none for its sync (IdlePause).
	heldByThrottle bool
}

func newFetcher(self, leader int32) *Fetcher {
	return &Fetcher{self: self, leader: leader, parts: map[partition.Key]*partition.Partition{}, notBefore: map[partition.Key]time.Time{}}
}

// Leader is the broker this fetcher fetches from.
func (f *Fetcher) Leader() int32 { return f.leader }

// SetWake gives the fetcher the driver's wake: called (without blocking)
// when a partition is added or takes a new role, so that the driver builds
// again at once rather than at its next poll.
func (f *Fetcher) SetWake(wake func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wake = wake
}

func (f *Fetcher) wakeUp() {
	f.mu.Lock()
	wake := f.wake
	f.mu.Unlock()
	if wake != nil {
		wake()
	}
}

func (f *Fetcher) add(now time.Time, p *partition.Partition) {
	f.mu.Lock()
	f.parts[p.Key()] = p
	delete(f.notBefore, p.Key())
	f.changed = true
	if f.interrupt != nil && f.inFlightFor > addBurstWait {
		if now.Sub(f.windowStart) >= time.Second {
			f.windowStart, f.interrupts = now, 0
		}
		if f.interrupts >= maxInterrupts {
			// A burst: the polls after this one are short (Build), and
			// this long one is cut too, or the partition would wait it out.
			// Only a poll longer than addBurstWait is interrupted, so a
			// burst costs one interrupt a second beyond maxInterrupts.
			f.lastBurst = now
		}
		f.interrupts++
		f.interrupt()
		f.interrupted = true
	}
	f.mu.Unlock()
	f.wakeUp()
}

// remove drops k and reports whether the fetcher has nothing left.
func (f *Fetcher) remove(k partition.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, k)
	delete(f.notBefore, k)
	return len(f.parts) == 0
}

// Sent is what a fetch in flight asked of each partition.
type Sent map[partition.Key]SentPartition

// SentPartition is one partition of a fetch in flight.
type SentPartition struct {
	Part *partition.Partition
	Req  replication.FetchRequest
}

// SyncPending are the partitions of s still waiting for the sync of what
// they appended (sync=always), which the driver waits for, up to SyncAwait.
func (s Sent) SyncPending() []*partition.Partition {
	var out []*partition.Partition
	for _, sp := range s {
		if st, _ := sp.Part.FollowerState(); st.SyncPending {
			out = append(out, sp.Part)
		}
	}
	return out
}

// Build makes the fetch for every partition that has one to send now, at
// this broker's brokerEpoch; an empty Sent means none has (the driver
// looks again after SyncPoll, or at a wake).
func (f *Fetcher) Build(now time.Time, brokerEpoch int64) (*kmsg.FetchRequest, Sent) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.self, brokerEpoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(ReplicaFetchWait/time.Millisecond), 1, replicaFetchResponseBytes
	req.SessionID, req.SessionEpoch = 0, -1
	sent := Sent{}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = false
	wait := ReplicaFetchWait
	if now.Sub(f.lastBurst) < addBurst {
		wait = addBurstWait
	}
	for _, t := range f.notBefore {
		if d := t.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	byTopic := map[uuid.UUID]int{}
	// allowance is what the throttle lets the throttled partitions of this
	// fetch ask for, shared out in order; each still gets one batch.
	allowance := int64(math.MaxInt64)
	if f.throttle != nil {
		allowance = f.throttle.Quota.Allowance(now)
	}
	heldByThrottle, syncPending := false, false
	for _, k := range sortedKeys(f.parts) {
		p := f.parts[k]
		if now.Before(f.notBefore[k]) {
			continue
		}
		throttled := f.throttle != nil && f.throttle.Throttled(k) && !caughtUp(p)
		if throttled && allowance <= 0 {
			heldByThrottle = true
			continue
		}
		fr, ok := p.NextFetch()
		if !ok {
			if st, _ := p.FollowerState(); st.SyncPending {
				wait = min(wait, syncPendingWait)
				syncPending = true
			}
			continue
		}
		if fr.Leader != f.leader {
			continue
		}
		maxBytes := int64(replicaFetchBytes)
		if throttled {
			maxBytes = min(maxBytes, allowance)
			allowance -= maxBytes
		}
		i, ok := byTopic[k.TopicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.TopicID = k.TopicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[k.TopicID] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset = k.Index, fr.CurrentLeaderEpoch, fr.FetchOffset
		rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = fr.LastFetchedEpoch, fr.LogStartOffset, int32(maxBytes)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[k] = SentPartition{Part: p, Req: fr}
	}
	req.MaxWaitMillis = int32(max(wait/time.Millisecond, 1))
	f.heldByThrottle = heldByThrottle && !syncPending
	return req, sent
}

// caughtUp reports whether follower p has reached the high watermark its
// leader last gave it: it is about to join the ISR (or has, and this
// broker's metadata does not say so yet), and from then on the high
// watermark waits for its fetches, which the throttle must not hold. A
// follower that has not heard of a high watermark yet is not.
func caughtUp(p *partition.Partition) bool {
	st, ok := p.FollowerState()
	return ok && st.LeaderHW > 0 && st.LogEnd >= st.LeaderHW
}

// IdlePause is how long a driver whose Build had nothing to send waits
// before building again (unless woken): SyncPoll while a partition waits
// for its sync, ThrottlePoll while the throttle alone holds them.
func (f *Fetcher) IdlePause() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heldByThrottle {
		return ThrottlePoll
	}
	return SyncPoll
}

// NextWake is when a partition held back by a backoff may fetch again
// (zero: none is held back), for a driver that does not poll.
func (f *Fetcher) NextWake(now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var at time.Time
	for k, t := range f.notBefore {
		if _, ok := f.parts[k]; ok && t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// BeginFlight says req is about to be sent; interrupt ends it (without
// blocking) when a partition added meanwhile must not wait out its poll.
func (f *Fetcher) BeginFlight(req *kmsg.FetchRequest, interrupt func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed {
		// Added between Build and here: a short poll, so that the next
		// build takes it in soon (building again at once could starve
		// under a stream of additions).
		req.MaxWaitMillis = min(req.MaxWaitMillis, int32(addBurstWait/time.Millisecond))
	}
	f.interrupt, f.interrupted = interrupt, false
	f.inFlightFor = time.Duration(req.MaxWaitMillis) * time.Millisecond
}

// EndFlight says the fetch in flight ended, failed when err is set. It
// returns the pause before the next fetch: a backoff after a failure,
// none after an interrupt or the failure that follows one.
func (f *Fetcher) EndFlight(err error) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	interrupted := f.interrupted
	f.interrupt, f.interrupted = nil, false
	if err == nil {
		f.afterInterrupt = false
		return 0
	}
	retry := interrupted || f.afterInterrupt
	f.afterInterrupt = interrupted
	if retry {
		return 0
	}
	return ReplicaFetchBackoff
}

// Handle gives each partition of sent its part of the leader's answer, and
// holds back those that must wait.
func (f *Fetcher) Handle(now time.Time, resp *kmsg.FetchResponse, sent Sent, log *slog.Logger) {
	if resp.ErrorCode != 0 {
		log.Debug("replica fetch refused", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
		for k := range sent {
			f.hold(now, k, ReplicaFetchBackoff)
		}
		return
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := partition.Key{TopicID: rt.TopicID, Index: rp.Partition}
			sn, ok := sent[k]
			if !ok {
				continue
			}
			res := partition.FetchResult{
				Request: sn.Req, Err: kerr.ErrorForCode(rp.ErrorCode),
				HighWatermark: rp.HighWatermark, LogStartOffset: rp.LogStartOffset, Records: rp.RecordBatches,
			}
			if rp.DivergingEpoch.Epoch >= 0 && rp.DivergingEpoch.EndOffset >= 0 {
				res.Diverging = &replication.EpochEnd{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset}
			}
			if f.throttle != nil && len(rp.RecordBatches) > 0 && f.throttle.Throttled(k) {
				f.throttle.Quota.Record(now, len(rp.RecordBatches))
			}
			if rp.ErrorCode != 0 {
				log.Debug("replica fetch partition error", "partition", k.String(), "leader", f.leader, "err", res.Err)
			}
			err := sn.Part.HandleFetch(res)
			switch {
			case err == nil:
			case partition.IsBackoff(err) && leaderBehind(res.Err):
				f.hold(now, k, metadataLagBackoff)
			case partition.IsBackoff(err), partition.IsNeedMetadata(err):
				f.hold(now, k, ReplicaFetchBackoff)
			default:
				log.Warn("applying a replica fetch", "partition", k.String(), "leader", f.leader, "err", err)
				f.hold(now, k, ReplicaFetchBackoff)
			}
		}
	}
}

// leaderBehind reports whether a leader's partition error means it has
// not yet caught up with the metadata that made this broker its follower.
func leaderBehind(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition) ||
		errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownLeaderEpoch)
}

func (f *Fetcher) hold(now time.Time, k partition.Key, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notBefore[k] = now.Add(d)
}

// LeaderAddr is where broker leader serves, from the metadata; false while
// it is unknown or fenced (the driver pauses ReplicaFetchBackoff).
func LeaderAddr(img *cluster.Metadata, leader int32) (string, bool) {
	b, ok := img.Broker(leader)
	if !ok || b.Fenced {
		return "", false
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
}

// FetchTimeout is how long a driver waits for the answer to req.
func FetchTimeout(req *kmsg.FetchRequest) time.Duration {
	return time.Duration(req.MaxWaitMillis)*time.Millisecond + FetchTimeoutSlack
}
