package replication

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FollowerConfig is what a broker knows of a partition when the metadata
// makes it a follower, and the state of its local log then.
type FollowerConfig struct {
	Self        int32
	BrokerEpoch int64 // Self's broker epoch, sent in fetches (KIP-903)
	Leader      int32
	LeaderEpoch int32
	// CountDurable: fetched batches count only once the host reports them
	// durable (LocalDurable). The follower then fetches again only when its
	// log end is durable, so the fetch offset the leader counts toward the
	// HW is one a crash spares. The broker sets it under every sync policy:
	// its durable end is where the log's Sync returned (on disk under
	// sync=always, out of the process's hands under the others). Otherwise
	// an Append is taken as durable at once.
	CountDurable bool

	LogStart   int64
	LogEnd     int64
	DurableEnd int64
	HW         int64 // the local checkpoint, clamped to the log
	// Epochs is the partition's cache. The Follower updates it as it emits
	// Append, Truncate, ResetLog and DeleteBefore, and says so with
	// SaveEpochs; it reads it for LastFetchedEpoch and truncation points.
	Epochs *EpochCache

	mut mutations // test-only; see mutations.go
}

// FetchRequest is the fetch a follower sends its leader for this partition
// (a Fetch with ReplicaID/ReplicaState = Replica, BrokerEpoch).
type FetchRequest struct {
	Leader             int32 // where to send it
	Replica            int32
	BrokerEpoch        int64
	CurrentLeaderEpoch int32
	FetchOffset        int64
	LastFetchedEpoch   int32 // -1 when the log is empty: nothing to check
	LogStartOffset     int64
}

// Follower is one partition as a follower sees it: where to fetch from, and
// what to do with what comes back (append, truncate on a diverging epoch,
// reset below the leader's start, back off). It is not safe for concurrent
// use; the shell serializes Step and NextFetch calls, and performs the
// actions of one Step before calling NextFetch.
type Follower struct {
	self, leader                  int32
	brokerEpoch                   int64
	leaderEpoch                   int32
	countDurable                  bool
	logStart, logEnd, durable, hw int64
	// leaderHW is the highest high watermark the leader has reported (the
	// local HW until it reports one): how far this replica is behind is
	// leaderHW - logEnd, as of the last response.
	leaderHW int64
	epochs   *EpochCache
	// stale is why this follower stopped fetching: its leader epoch is
	// older than the leader's. Only new metadata (a new Follower) helps.
	stale error
	// noEpochCheck: fetch without LastFetchedEpoch (mutations only).
	noEpochCheck bool
	mut          mutations
}

// NewFollower builds the follower of a partition from cfg. Its actions come
// first (none, except under a test mutation).
func NewFollower(cfg FollowerConfig) (*Follower, []Action, error) {
	switch {
	case cfg.Epochs == nil:
		return nil, nil, errors.New("replication: follower without an epoch cache")
	case !(cfg.LogStart <= cfg.DurableEnd && cfg.DurableEnd <= cfg.LogEnd):
		return nil, nil, fmt.Errorf("replication: log start %d, durable end %d, end %d out of order", cfg.LogStart, cfg.DurableEnd, cfg.LogEnd)
	}
	f := &Follower{
		self: cfg.Self, leader: cfg.Leader, brokerEpoch: cfg.BrokerEpoch, leaderEpoch: cfg.LeaderEpoch,
		countDurable: cfg.CountDurable,
		logStart:     cfg.LogStart, logEnd: cfg.LogEnd, durable: cfg.DurableEnd,
		hw:     min(max(cfg.HW, cfg.LogStart), cfg.LogEnd),
		epochs: cfg.Epochs, mut: cfg.mut,
	}
	f.leaderHW = f.hw
	if f.mut.has(mutTruncateToHW) {
		f.noEpochCheck = true
		if f.hw < f.logEnd {
			return f, f.truncate(f.hw), nil
		}
	}
	return f, nil, nil
}

// NextFetch is the fetch to send now, and false when none may be sent: the
// follower is stale (NeedMetadata), or with CountDurable its log end is
// not yet durable.
func (f *Follower) NextFetch() (FetchRequest, bool) {
	if f.stale != nil || (f.countDurable && f.durable < f.logEnd && !f.mut.has(mutCountUnsynced)) {
		return FetchRequest{}, false
	}
	last := f.epochs.LatestEpoch()
	if f.noEpochCheck {
		last = -1
	}
	return FetchRequest{
		Leader: f.leader, Replica: f.self, BrokerEpoch: f.brokerEpoch, CurrentLeaderEpoch: f.leaderEpoch,
		FetchOffset: f.logEnd, LastFetchedEpoch: last, LogStartOffset: f.logStart,
	}, true
}

// Step feeds one event and returns what the shell must do, in order. It
// panics on an event a follower does not take (a programming error).
func (f *Follower) Step(ev Event) []Action {
	switch ev := ev.(type) {
	case FetchResponse:
		if f.stale != nil || ev.FetchOffset != f.logEnd {
			return nil // late or duplicated: the log has moved since
		}
		if ev.Err == nil {
			f.leaderHW = max(f.leaderHW, ev.HighWatermark)
		}
		switch {
		case ev.Err != nil:
			return f.fetchError(ev)
		case ev.DivergingEpoch != nil:
			return f.diverged(*ev.DivergingEpoch)
		}
		return f.appendBatches(ev)
	case LocalDurable:
		f.durable = max(f.durable, min(ev.End, f.logEnd))
		return nil
	case LogStartMoved:
		return f.moveStart(ev.Start, false)
	}
	panic(fmt.Sprintf("replication: a Follower does not take %T", ev))
}

func (f *Follower) fetchError(r FetchResponse) []Action {
	switch {
	case errors.Is(r.Err, kerr.OffsetOutOfRange) && f.logEnd < r.LogStartOffset:
		return f.reset(r.LogStartOffset)
	case errors.Is(r.Err, kerr.FencedLeaderEpoch):
		// Our epoch is older than the leader's: we are the stale one.
		f.stale = r.Err
		return []Action{NeedMetadata{Err: r.Err}}
	}
	// UNKNOWN_LEADER_EPOCH (the leader is behind us: it will catch up),
	// NOT_LEADER_OR_FOLLOWER, an offset past the end of a leader we cannot
	// check epochs with, anything else: try again later.
	return []Action{Backoff{Err: r.Err}}
}

// reset restarts an empty log at the leader's log start, which is above
// everything this follower has.
func (f *Follower) reset(start int64) []Action {
	f.logStart, f.logEnd, f.durable = start, start, start
	acts := []Action{ResetLog{Start: start}}
	if f.epochs.Clear() {
		acts = append(acts, SaveEpochs{})
	}
	if start > f.hw {
		f.hw = start
		acts = append(acts, AdvanceHW{To: start})
	}
	return acts
}

var errNoTruncation = errors.New("replication: diverging epoch without a truncation point")

// diverged truncates where the leader's log and ours part (KIP-101,
// KIP-279). Truncating to the HW instead would drop acknowledged records
// the HW has not caught up with.
func (f *Follower) diverged(d EpochEnd) []Action {
	if d.Epoch < 0 || d.EndOffset < 0 {
		return []Action{Backoff{Err: fmt.Errorf("%w: leader answered %d/%d", errNoTruncation, d.Epoch, d.EndOffset)}}
	}
	to := f.truncationPoint(d)
	switch {
	case f.mut.has(mutTruncateToHW):
		to = f.hw
	case f.mut.has(mutLeaderEndOnly):
		to, f.noEpochCheck = min(d.EndOffset, f.logEnd), true
	}
	to = max(to, f.logStart)
	if to >= f.logEnd {
		// Nothing of the log to drop, but the cache may end with epochs
		// that start at the log end: leaderships in which this replica
		// wrote nothing. The last of them is what it fetched with, and the
		// leader, which never had it, answers diverging again and again.
		// Truncating the log to its end drops them, as in Kafka, and the
		// next fetch carries the epoch of the last batch.
		if f.epochs.TruncateFromEnd(f.logEnd) {
			return []Action{SaveEpochs{}}
		}
		return []Action{Backoff{Err: fmt.Errorf("%w: leader answered %d/%d at end %d", errNoTruncation, d.Epoch, d.EndOffset, f.logEnd)}}
	}
	return f.truncate(to)
}

// truncationPoint is Kafka's: where our own copy of the leader's diverging
// epoch ends, or the leader's end of it if earlier. When we lack that epoch
// we cut back to the end of our largest epoch below it, and the next fetch
// checks again; after two quick leader changes (KIP-279) that takes more
// than one round, and converges.
func (f *Follower) truncationPoint(d EpochEnd) int64 {
	fe, fend := f.epochs.EndOffsetFor(d.Epoch, f.logEnd)
	switch {
	case fe < 0:
		return min(d.EndOffset, f.logEnd) // no epochs of our own to go by
	case fe != d.Epoch:
		return min(fend, f.logEnd)
	}
	return min(fend, d.EndOffset, f.logEnd)
}

func (f *Follower) truncate(to int64) []Action {
	f.logEnd = to
	f.durable = min(f.durable, to)
	f.hw = min(f.hw, to)
	acts := []Action{Truncate{To: to}}
	if f.epochs.TruncateFromEnd(to) {
		acts = append(acts, SaveEpochs{})
	}
	return acts
}

// appendBatches checks a response's batches whole, appends them, and
// follows the leader's HW and log start.
func (f *Follower) appendBatches(r FetchResponse) []Action {
	next, latest := f.logEnd, f.lastBatchEpoch()
	for _, b := range r.Batches {
		var why string
		switch {
		case b.Corrupt:
			why = "corrupt"
		case b.LastOffset < b.BaseOffset:
			why = "ends before it starts"
		case b.BaseOffset != next:
			why = fmt.Sprintf("not contiguous with %d", next)
		case b.Epoch > f.leaderEpoch && !f.mut.has(mutNoEpochFencing):
			why = fmt.Sprintf("epoch %d above the leader's %d", b.Epoch, f.leaderEpoch)
		case b.Epoch < latest:
			why = fmt.Sprintf("epoch %d below the log's %d", b.Epoch, latest)
		}
		if why != "" {
			// Nothing of this response is stored: fetch it again.
			return []Action{Backoff{Err: fmt.Errorf("fetched batch at %d %s: %w", b.BaseOffset, why, kerr.CorruptMessage)}}
		}
		next, latest = b.NextOffset(), b.Epoch
	}
	var acts []Action
	if len(r.Batches) > 0 {
		acts = append(acts, Append{Batches: slices.Clone(r.Batches)})
		changed := false
		for _, b := range r.Batches {
			changed = f.epochs.Assign(b.Epoch, b.BaseOffset) || changed
		}
		f.logEnd = next
		if !f.countDurable {
			f.durable = next
		}
		if changed {
			acts = append(acts, SaveEpochs{})
		}
	}
	if hw := min(r.HighWatermark, f.logEnd); hw > f.hw {
		f.hw = hw
		acts = append(acts, AdvanceHW{To: hw})
	}
	return append(acts, f.moveStart(min(r.LogStartOffset, f.hw), true)...)
}

// moveStart follows a log start that moved to start: the leader's (then
// the shell must delete: del), or ours by retention (already deleted).
func (f *Follower) moveStart(start int64, del bool) []Action {
	if start <= f.logStart {
		return nil
	}
	f.logStart = start
	var acts []Action
	if del {
		acts = append(acts, DeleteBefore{Offset: start})
	}
	if f.epochs.TruncateFromStart(start) {
		acts = append(acts, SaveEpochs{})
	}
	return acts
}

// FollowerState is a read-only snapshot of a Follower.
type FollowerState struct {
	Leader      int32
	LeaderEpoch int32
	LogStart    int64
	LogEnd      int64
	DurableEnd  int64
	HW          int64
	// LeaderHW is the highest high watermark the leader reported, as of
	// the last fetch response (HW before the first): LeaderHW - LogEnd is
	// how far behind this replica is, the lag DescribeLogDirs reports.
	LeaderHW int64
	// SyncPending: with CountDurable, the log end is not yet durable, so
	// no fetch goes out.
	SyncPending bool
	// Stale is why the follower waits for metadata, nil when it does not.
	Stale error
}

// State is a snapshot of the follower.
func (f *Follower) State() FollowerState {
	return FollowerState{
		Leader: f.leader, LeaderEpoch: f.leaderEpoch,
		LogStart: f.logStart, LogEnd: f.logEnd, DurableEnd: f.durable, HW: f.hw, LeaderHW: f.leaderHW,
		SyncPending: f.countDurable && f.durable < f.logEnd, Stale: f.stale,
	}
}

// HW is the follower's high watermark.
func (f *Follower) HW() int64 { return f.hw }

// lastBatchEpoch is the epoch of the last batch in the log: the latest
// cache entry that starts below the log end. Entries at the end are
// epochs this replica led without writing; a fetched batch of an older
// epoch replaces them (Assign drops them), it is not out of order.
func (f *Follower) lastBatchEpoch() int32 {
	es := f.epochs.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].StartOffset < f.logEnd {
			return es[i].Epoch
		}
	}
	return -1
}
