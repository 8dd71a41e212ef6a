package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/replication"
)

// A partition's part in replication: package replication's state machines
// (a Leader while this broker leads, a Follower while it follows) hosted
// here, with their events fed from the log (appends, syncs, truncations)
// and their actions done on it. The broker's shell feeds the rest: the
// metadata (SetState), the followers' fetches (ServeFollower), the leader's
// answers (HandleFetch), the controller's (AlterPartitionResult), the time
// (Tick).
//
// Locks: p.mu (the append lock) is taken before p.repMu. Leader events need
// repMu alone; follower events change the log and take both.

// ReplicaState is what the metadata says of a partition, and of this
// broker's place in it.
type ReplicaState struct {
	// Self is this broker's id, BrokerEpoch its registered epoch.
	Self        int32
	BrokerEpoch int64
	// Lead: this broker may lead (registered with its current epoch and
	// unfenced). A partition whose Leader is Self leads only then.
	Lead           bool
	Leader         int32 // -1: none
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR, ELR       []int32
	MinISR         int
	// Eligible are the brokers that may join the ISR, with their epochs.
	Eligible []replication.ISRMember
	Now      time.Time
}

// Replication is what the manager's partitions need of the broker for
// replication. The zero value serves a partition whose replicas are this
// broker alone.
type Replication struct {
	// ProposeISR sends a leader's ISR change to the controller
	// (AlterPartition) and answers with p.AlterPartitionResult. It must
	// not block: it runs under the partition's replication lock.
	ProposeISR func(p *Partition, prop replication.ProposeISR)
	// LagTime is replica.lag.time.max.ms; 0: replication.DefaultLagTime.
	LagTime time.Duration
	// ConfigureLeader and ConfigureFollower, when set, see each state
	// machine's configuration before it is built. They are a test seam:
	// the simulator switches a protection off through them in a build with
	// the mutations tag (replication's Mutate); the broker leaves them nil.
	ConfigureLeader   func(*replication.LeaderConfig)
	ConfigureFollower func(*replication.FollowerConfig)
}

// role is the state machine a partition runs.
type role struct {
	leader   *replication.Leader
	follower *replication.Follower
	// gen counts roles, so that an answer to an earlier Leader's proposal
	// is not given to a later one.
	gen uint64
}

// SetState applies the metadata's view of the partition: this broker
// becomes its leader, a follower, or neither, at the state's leader epoch.
// A state of an older leader epoch than the current one is ignored (epochs
// never go back); one of the same epoch updates the role in place. It
// reports whether the role changed.
func (p *Partition) SetState(st ReplicaState) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, p.closedErr()
	}
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if st.LeaderEpoch < p.epoch {
		return false, nil
	}
	lead := st.Lead && st.Leader == st.Self
	follow := !lead && st.Leader >= 0 && st.Leader != st.Self && slices.Contains(st.Replicas, st.Self)
	// A new broker epoch (this broker registered again) is a new role too:
	// its fetches and proposals must carry it, or the leader never takes
	// this replica back into the ISR (KIP-903).
	same := st.LeaderEpoch == p.epoch && st.Leader == p.leaderID && lead == p.leader &&
		(follow == (p.role.follower != nil)) && st.BrokerEpoch == p.brokerEpoch
	if same {
		if l := p.role.leader; l != nil {
			p.applyLocked(l.Step(replication.MetadataUpdate{
				LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch, Replicas: st.Replicas,
				ISR: st.ISR, ELR: st.ELR, Eligible: st.Eligible, MinISR: st.MinISR, Now: st.Now,
			}))
			p.wm.poke() // the ISR may have shrunk below min.insync.replicas
		}
		return false, nil
	}
	if p.leader {
		p.endLeadership()
	}
	p.role = role{gen: p.role.gen + 1}
	p.epoch, p.leaderID, p.leader, p.brokerEpoch, p.self = st.LeaderEpoch, st.Leader, lead, st.BrokerEpoch, st.Self
	switch {
	case lead:
		cfg := replication.LeaderConfig{
			Self: st.Self, BrokerEpoch: st.BrokerEpoch, Replicas: st.Replicas, ISR: st.ISR, ELR: st.ELR,
			LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch, MinISR: st.MinISR,
			LagTime: p.repl.LagTime, LogStart: p.log.StartOffset(), LogEnd: p.log.EndOffset(),
			DurableEnd: p.durable.get(), HW: p.wm.get(), Epochs: p.epochs, Eligible: st.Eligible, Now: st.Now,
		}
		if p.repl.ConfigureLeader != nil {
			p.repl.ConfigureLeader(&cfg)
		}
		l, acts, err := replication.NewLeader(cfg)
		if err != nil {
			p.leader = false
			return true, p.wrap(fmt.Errorf("become leader at epoch %d: %w", st.LeaderEpoch, err))
		}
		p.role.leader = l
		p.tenure = &tenure{gone: make(chan struct{})}
		p.applyLocked(acts)
	case follow:
		if err := p.followLocked(); err != nil {
			return true, err
		}
	}
	p.fetchable.poke()
	return true, nil
}

// tenure is one leadership of this broker's.
type tenure struct {
	gone chan struct{} // closed when it ends
	// endHW is the high watermark when it ended, set before gone is
	// closed: a produce it acknowledges is one that HW passed.
	endHW int64
}

// followLocked builds the Follower of the role set (leader, leader epoch,
// broker epoch) from the log as it is. The caller holds mu and repMu.
func (p *Partition) followLocked() error {
	cfg := replication.FollowerConfig{
		Self: p.self, BrokerEpoch: p.brokerEpoch, Leader: p.leaderID, LeaderEpoch: p.epoch,
		CountDurable: true, LogStart: p.log.StartOffset(), LogEnd: p.log.EndOffset(),
		DurableEnd: p.durable.get(), HW: p.wm.get(), Epochs: p.epochs,
	}
	if p.repl.ConfigureFollower != nil {
		p.repl.ConfigureFollower(&cfg)
	}
	f, acts, err := replication.NewFollower(cfg)
	if err != nil {
		p.role.follower = nil
		return p.wrap(fmt.Errorf("become follower of %d at epoch %d: %w", p.leaderID, p.epoch, err))
	}
	p.role.follower = f
	p.applyLocked(acts)
	return nil
}

// endLeadership fails every produce waiting for this leadership: its
// batches may still be committed by the next leader, and the producer's
// retry finds them there (the producer state is replicated).
func (p *Partition) endLeadership() {
	p.tenure.endHW = p.wm.get()
	close(p.tenure.gone)
	p.tenure = nil
	p.wm.poke()
	p.starts.poke()
}

// applyLocked performs a state machine's actions; the caller holds repMu,
// and p.mu too for a follower's actions on the log. It returns the
// follower's fetch outcome: the first Backoff or NeedMetadata reason.
func (p *Partition) applyLocked(acts []replication.Action) error {
	var outcome error
	for _, a := range acts {
		switch a := a.(type) {
		case replication.AdvanceHW:
			p.wm.advance(a.To)
		case replication.ProposeISR:
			if p.repl.ProposeISR != nil {
				p.repl.ProposeISR(p, a)
			}
		case replication.SaveEpochs:
			p.epochsDirty = true
		case replication.Truncate:
			if err := p.truncateLocked(a.To); err != nil {
				outcome = err
			}
		case replication.ResetLog:
			if err := p.resetLocked(a.Start); err != nil {
				outcome = err
			}
		case replication.DeleteBefore:
			if a.Offset <= p.wm.get() {
				// Under the time index's lock, as deleteBefore: the
				// retention check may be scanning this follower's log.
				p.ti.mu.Lock()
				if err := p.snapshotCoveringLocked(a.Offset); err != nil {
					outcome = err
				} else if err := p.log.DeleteBefore(a.Offset); err != nil {
					outcome = p.writeFailed("delete before", err)
				} else {
					p.startPassedDurable()
				}
				p.ti.reset()
				p.ti.mu.Unlock()
			}
		case replication.Backoff:
			if outcome == nil {
				outcome = errBackoff{a.Err}
			}
		case replication.NeedMetadata:
			if outcome == nil {
				outcome = errNeedMetadata{a.Err}
			}
		case replication.Append, replication.FetchAnswer:
			// Done by the caller, which holds the bytes and the answer.
		}
	}
	p.noteLowLocked()
	return outcome
}

// errBackoff and errNeedMetadata carry a follower's fetch outcome to the
// fetcher: retry after a backoff, or stop until new metadata.
type errBackoff struct{ err error }

func (e errBackoff) Error() string { return fmt.Sprintf("fetch again after a backoff: %v", e.err) }
func (e errBackoff) Unwrap() error { return e.err }

type errNeedMetadata struct{ err error }

func (e errNeedMetadata) Error() string {
	return fmt.Sprintf("stale leader epoch, waiting for metadata: %v", e.err)
}
func (e errNeedMetadata) Unwrap() error { return e.err }

// IsBackoff and IsNeedMetadata tell the fetch outcomes of HandleFetch apart.
func IsBackoff(err error) bool      { var e errBackoff; return errors.As(err, &e) }
func IsNeedMetadata(err error) bool { var e errNeedMetadata; return errors.As(err, &e) }

// stepLeader feeds ev to the Leader, if this broker leads, and performs
// its actions.
func (p *Partition) stepLeader(ev replication.Event) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if l := p.role.leader; l != nil {
		p.applyLocked(l.Step(ev))
	}
}

// localDurable reports that the log is durable up to end: to the role's
// state machine, and to what waits on the durable end. The caller holds
// p.mu.
func (p *Partition) localDurable(end int64) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	p.localDurableLocked(end)
}

// localDurableLocked is localDurable for a caller that holds repMu too.
//
// The role steps first and the durable end moves after: an acks=1 produce
// waits on the durable end, and its response must find the high watermark
// already raised (Kafka raises a lone replica's HW before it answers, so a
// client that produces and then fetches sees its record).
func (p *Partition) localDurableLocked(end int64) {
	switch {
	case p.role.leader != nil:
		p.applyLocked(p.role.leader.Step(replication.LocalDurable{End: end}))
	case p.role.follower != nil:
		p.applyLocked(p.role.follower.Step(replication.LocalDurable{End: end}))
	}
	p.durable.advance(end)
}

// Tick lets the leader shrink the ISR and retry its proposals.
func (p *Partition) Tick(now time.Time) { p.stepLeader(replication.Tick{Now: now}) }

// AlterPartitionResult gives the controller's answer to prop, which the
// Leader of role generation gen made (the ProposeISR hook gets it with
// ProposalGen right when it runs).
func (p *Partition) AlterPartitionResult(gen uint64, res replication.AlterPartitionResult) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if l := p.role.leader; l != nil && p.role.gen == gen {
		p.applyLocked(l.Step(res))
	}
	p.wm.poke()
}

// ProposalGen is the generation of the current role, for the ProposeISR
// hook, which runs under the replication lock, to hand back with its
// answer.
func (p *Partition) ProposalGen() uint64 { return p.role.gen }

// CheckProduce refuses an acks=all produce with NOT_ENOUGH_REPLICAS when the
// ISR is below min.insync.replicas, before anything is appended.
func (p *Partition) CheckProduce(acks int16) error {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if l := p.role.leader; l != nil {
		if err := l.CheckProduce(acks); err != nil {
			return p.wrap(fmt.Errorf("ISR below min.insync.replicas: %w", err))
		}
	}
	return nil
}

// afterAppendCheck is NOT_ENOUGH_REPLICAS_AFTER_APPEND once the ISR a
// waiting acks=all batch counts on shrank below min.insync.replicas.
func (p *Partition) afterAppendCheck() error {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if l := p.role.leader; l != nil {
		return l.AfterAppendCheck()
	}
	return nil
}

// LeaderStatus is the leader's replication state (ISR, followers' lag) as
// of now, and false when this broker does not lead the partition.
func (p *Partition) LeaderStatus(now time.Time) (replication.LeaderStatus, bool) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if l := p.role.leader; l != nil {
		return l.Status(now), true
	}
	return replication.LeaderStatus{}, false
}

// FollowerState is the follower's replication state, and false when this
// broker does not follow the partition.
func (p *Partition) FollowerState() (replication.FollowerState, bool) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if f := p.role.follower; f != nil {
		return f.State(), true
	}
	return replication.FollowerState{}, false
}

// ReplicationBytes is how many record bytes this replica has appended as a
// follower (in) and served to followers as leader (out) since it opened.
func (p *Partition) ReplicationBytes() (in, out int64) {
	return p.replBytesIn.Load(), p.replBytesOut.Load()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from the leader epoch
// cache: the largest epoch at or below epoch and the offset where it ends
// here (the log end for the latest), or (-1, -1) when nothing is known.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	return p.epochs.EndOffsetFor(epoch, p.log.EndOffset())
}

// NoRecords is ServeFollower's maxBytes for an answer without records.
const NoRecords = -1

// ReplicaRead is a leader's answer to a follower's fetch.
type ReplicaRead struct {
	Records        []byte
	HighWatermark  int64
	LogStartOffset int64
	Diverging      *replication.EpochEnd
	// To is the leader's log end: what a follower may fetch up to.
	To int64
}

// ServeFollower answers a follower's fetch: the batches from its fetch
// offset up to this leader's log end (not capped by the high watermark
// nor by what this leader has synced), about maxBytes of them but at least one, or a diverging
// epoch for it to truncate to. The fetch counts toward the ISR and the high
// watermark. Errors wrap kerr values: NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, OFFSET_OUT_OF_RANGE. With
// maxBytes NoRecords (a throttled copy) the fetch counts all the same but
// no records are read.
func (p *Partition) ServeFollower(ev replication.FollowerFetch, maxBytes int) (ReplicaRead, error) {
	return p.ServeFollowerLeased(ev, maxBytes, nil)
}

// ServeFollowerLeased is ServeFollower reading into pooled memory that
// lease holds (bufpool): the records are valid until the lease is
// released. A nil lease is ServeFollower.
func (p *Partition) ServeFollowerLeased(ev replication.FollowerFetch, maxBytes int, lease *bufpool.Lease) (ReplicaRead, error) {
	if p.gone.Load() {
		return ReplicaRead{}, p.closedErr()
	}
	p.repMu.Lock()
	l := p.role.leader
	if l == nil {
		p.repMu.Unlock()
		return ReplicaRead{}, p.wrap(fmt.Errorf("not the leader: %w", kerr.NotLeaderForPartition))
	}
	acts := l.Step(ev)
	answer := acts[0].(replication.FetchAnswer)
	p.applyLocked(acts[1:])
	p.repMu.Unlock()
	rd := ReplicaRead{HighWatermark: answer.HighWatermark, LogStartOffset: answer.LogStartOffset, Diverging: answer.Diverging, To: answer.To, Records: []byte{}}
	if answer.Err != nil {
		return rd, p.wrap(answer.Err)
	}
	if answer.Diverging != nil || answer.From >= answer.To || maxBytes == NoRecords {
		return rd, nil
	}
	recs, err := p.readRecords(answer.From, maxBytes, answer.To, lease)
	if err != nil {
		return rd, p.storageErr("read for a follower", err)
	}
	rd.Records = recs
	p.replBytesOut.Add(int64(len(rd.Records)))
	return rd, nil
}

// WatchFollowerData makes c (buffered) get a value whenever what
// FollowerDataReady reports may have changed (this leader's log end
// moved, the role changed, the partition closed), until the returned func
// is called: a follower's fetch parked on many partitions watches them all
// with one channel and checks FollowerDataReady when it gets a value.
func (p *Partition) WatchFollowerData(c chan<- struct{}) (stop func()) {
	return p.fetchable.watch(c)
}

// FollowerDataReady reports whether a follower at offset whose log starts
// at logStart (-1: not said) has something to fetch (this leader's log end
// passed it), or is to be answered at once: the role changed, the
// partition closed, or this leader's log start passed the follower's
// (DeleteRecords waits for the follower to learn it, which a long poll
// on a quiet partition would delay by its whole wait).
func (p *Partition) FollowerDataReady(offset, logStart int64) bool {
	return p.gone.Load() || p.log.EndOffset() > offset || !p.Role().Local || p.StartPassed(logStart)
}

// StartPassed reports whether this leader's log start, as its answers to
// followers give it, is past logStart, a follower's (-1: not said): the
// follower has news to learn. While this broker does not lead, the value
// is its last leadership's.
func (p *Partition) StartPassed(logStart int64) bool {
	return logStart >= 0 && p.leaderStart.Load() > logStart
}

// wholeBatches counts the leading batches of bs that end at or below end,
// and their bytes.
func wholeBatches(bs []engine.Batch, end int64) (n, size int) {
	for _, b := range bs {
		if b.NextOffset() > end {
			break
		}
		n++
		size += len(b.Data)
	}
	return n, size
}

// Concat joins the whole batches of bs that end at or below end into one
// record set, as a Fetch answer carries them (one batch as it is, without a
// copy; none: empty, not nil).
func Concat(bs []engine.Batch, end int64) []byte {
	n, size := wholeBatches(bs, end)
	switch n {
	case 0:
		return []byte{}
	case 1:
		return bs[0].Data
	}
	out := make([]byte, 0, size)
	for _, b := range bs[:n] {
		out = append(out, b.Data...)
	}
	return out
}

// NextFetch is the fetch this follower should send its leader now; false
// when it should not fetch (not a follower, stale, or what it appended is
// not yet covered by its log's Sync).
func (p *Partition) NextFetch() (replication.FetchRequest, bool) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if f := p.role.follower; f != nil {
		return f.NextFetch()
	}
	return replication.FetchRequest{}, false
}

// WaitSynced returns once everything this replica has appended is
// durable under its sync policy, which is what NextFetch waits for (a
// follower reports only what its log's Sync covered), ctx.Err() if ctx
// ends first, or the partition's error if its sync failed or it closed.
func (p *Partition) WaitSynced(ctx context.Context) error {
	return p.WaitDurable(ctx, p.log.EndOffset())
}

// FetchResult is the leader's answer for this partition, as a follower's
// fetcher got it.
type FetchResult struct {
	// Request is the fetch it answers, as NextFetch gave it. An answer to
	// a fetch of an earlier role (another leader, leader epoch or broker
	// epoch) is dropped: a FENCED_LEADER_EPOCH that the old leader gave
	// the old role's fetch would make the new role wait for metadata
	// that never comes.
	Request        replication.FetchRequest
	Err            error // kerr value of the partition's error code
	HighWatermark  int64
	LogStartOffset int64
	Diverging      *replication.EpochEnd
	Records        []byte
}

// HandleFetch applies the leader's answer: appends the fetched batches
// with the leader's offsets and epochs unchanged, truncates on a diverging
// epoch, follows the leader's log start and high watermark. A corrupt batch
// is refused, never stored; the next fetch asks for it again. The error is
// a fetch outcome (IsBackoff, IsNeedMetadata) or a storage failure.
func (p *Partition) HandleFetch(r FetchResult) error {
	batches, infos, err := splitFetched(r.Records)
	if err != nil {
		return p.wrap(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.closedErr()
	}
	p.repMu.Lock()
	defer p.repMu.Unlock()
	f := p.role.follower
	if q := r.Request; f == nil || q.Leader != p.leaderID || q.CurrentLeaderEpoch != p.epoch || q.BrokerEpoch != p.brokerEpoch {
		return nil
	}
	acts := f.Step(replication.FetchResponse{
		FetchOffset: r.Request.FetchOffset, Err: r.Err, HighWatermark: r.HighWatermark,
		LogStartOffset: r.LogStartOffset, DivergingEpoch: r.Diverging, Batches: infos,
	})
	// The SaveEpochs after an Append is for epochs the Append's batches
	// bring: the checkpoint is written before them (flushEpochsLocked).
	for _, a := range acts {
		if _, ok := a.(replication.SaveEpochs); ok {
			p.epochsDirty = true
		}
	}
	// In order: the Append before the HW that follows it.
	var outcome error
	for _, a := range acts {
		if ap, ok := a.(replication.Append); ok {
			if err := p.appendReplicatedLocked(ap.Batches, batches); err != nil {
				p.resyncFollowerLocked()
				return err
			}
			continue
		}
		if err := p.applyLocked([]replication.Action{a}); err != nil && outcome == nil {
			outcome = err
		}
	}
	return outcome
}

// resyncFollowerLocked rebuilds the Follower from the log after an
// append of fetched batches failed (a full disk): f counted them all, its
// epoch cache assigned their epochs, and what it did after the Append (the
// high watermark, the log start) was not done. Left as it was, it would
// fetch past the log end, or wait forever for a sync of what is not
// there. The caller holds mu and repMu.
func (p *Partition) resyncFollowerLocked() {
	if p.epochs.TruncateFromEnd(p.log.EndOffset()) {
		p.epochsDirty = true
	}
	if err := p.followLocked(); err != nil {
		p.logger.Error("rebuilding the follower after a failed append", "err", err)
	}
}

// splitFetched splits a fetched record set into batches and their headers,
// dropping a partial batch at the end (a leader cuts at maxBytes), and
// marking a corrupt one (the follower refuses the response).
func splitFetched(records []byte) (map[int64][]byte, []replication.BatchInfo, error) {
	parts, err := batch.SplitWhole(records)
	if err != nil {
		return nil, nil, err
	}
	bytesAt := make(map[int64][]byte, len(parts))
	infos := make([]replication.BatchInfo, 0, len(parts))
	for _, b := range parts {
		h, err := batch.ParseStored(b)
		if err != nil {
			hh, herr := batch.ParseHeader(b)
			infos = append(infos, replication.BatchInfo{BaseOffset: hh.BaseOffset, LastOffset: hh.BaseOffset + int64(hh.LastOffsetDelta), Corrupt: true})
			if herr != nil {
				return bytesAt, infos, nil
			}
			continue
		}
		info := replication.BatchInfo{BaseOffset: h.BaseOffset, LastOffset: h.BaseOffset + int64(h.LastOffsetDelta), Epoch: h.PartitionLeaderEpoch}
		bytesAt[info.BaseOffset] = b
		infos = append(infos, info)
	}
	return bytesAt, infos, nil
}

// appendReplicatedLocked appends fetched batches as they are: the leader's
// offsets and epochs, engine.Append with the caller's offsets. The producer
// state records each, so that a failover keeps idempotence.
func (p *Partition) appendReplicatedLocked(infos []replication.BatchInfo, bytesAt map[int64][]byte) error {
	if err := p.flushEpochsLocked(); err != nil {
		return err
	}
	nowMs := p.clock.Now().UnixMilli()
	for i, info := range infos {
		b := bytesAt[info.BaseOffset]
		h, err := batch.ParseHeader(b)
		if err != nil {
			return p.wrap(fmt.Errorf("replicated batch at %d: %w", info.BaseOffset, err))
		}
		if err := p.log.Append(engine.Batch{BaseOffset: info.BaseOffset, Records: h.Offsets(), Data: b}); err != nil {
			if i > 0 {
				p.afterAppendLocked(p.log.EndOffset()) // what was appended is synced
			}
			return p.writeFailed("append replicated", err)
		}
		if err := recordBatch(p.producers, b, h, info.BaseOffset, nowMs); err != nil {
			return p.wrap(fmt.Errorf("replicated batch at %d: %w", info.BaseOffset, err))
		}
		// A follower keeps the readers' view of its transactions too: once
		// it leads, its last stable offset must stop at a transaction
		// still open.
		p.noteTxnsLocked(h)
		p.sinceSnap += int64(len(b))
		p.replBytesIn.Add(int64(len(b)))
	}
	p.afterAppendLocked(p.log.EndOffset())
	return nil
}

// flushEpochsLocked brings the leader epoch checkpoint up to date (written
// and synced) when the cache changed since it was written and a checkpoint
// exists; the log takes no batch before it (Append, appendReplicatedLocked).
// A change alone (a new leadership, a truncation) is not written when it
// happens: what a checkpoint must never miss after a crash is an epoch some
// batch on disk carries, and entries a truncation or a new log start
// dropped are cut again to the log at open (loadEpochs). So a broker that
// takes the lead of thousands of partitions at once writes no file for
// them until they get records. Without a checkpoint (a new partition) the
// open rebuilds the cache from the batches, so the first one is written
// after the fact, off the append path and a moment later, by the
// background loop (saveFirstEpochs), or at close. A failure refuses the
// append: the old checkpoint would otherwise be read at the next open
// without the epochs of what follows. The caller holds repMu.
func (p *Partition) flushEpochsLocked() error {
	if !p.epochsDirty || !p.epochsOnDisk {
		return nil
	}
	return p.writeEpochsLocked()
}

// writeEpochsLocked writes the leader epoch checkpoint; the caller holds
// repMu.
func (p *Partition) writeEpochsLocked() error {
	p.epochsSeq++
	if err := p.writeEpochs(p.epochsSeq, p.epochs.Marshal()); err != nil {
		// A file may be in place now all the same (the rename done, the
		// directory sync failed): from here every append waits for a good
		// one, as if a checkpoint existed.
		p.epochsOnDisk = true
		return err
	}
	p.epochsDirty, p.epochsOnDisk = false, true
	return nil
}

// writeEpochs writes checkpoint contents numbered seq, unless newer ones
// were written already.
func (p *Partition) writeEpochs(seq uint64, body []byte) error {
	p.epochsFile.Lock()
	defer p.epochsFile.Unlock()
	if seq < p.epochsWritten {
		return nil
	}
	if err := engine.WriteChecked(p.fs, p.fs.PathJoin(p.dir, epochsCheckpointFile), epochsMagic, body); err != nil {
		return p.writeFailed("write the leader epoch checkpoint", err)
	}
	p.epochsWritten = seq
	return nil
}

// saveFirstEpochs writes the first leader epoch checkpoint of a partition
// that has none, for the background loop, in its first round at least
// firstEpochsDelay after the first (see flushEpochsLocked). It takes the
// cache's contents under the locks and writes them after releasing them,
// so that appends, and the fetches of followers and from leaders, do not
// wait for its syncs. What makes that safe: from the moment the contents
// are taken the partition counts its checkpoint as on disk, so an append
// that brings an epoch they lack writes a newer checkpoint before the log
// takes it (flushEpochsLocked), after this write, never before it
// (epochsFile and the sequence numbers); and an append of an epoch they
// hold needs nothing more, since until this write is synced a crash leaves
// no checkpoint and the next open rebuilds the cache from the batches.
func (p *Partition) saveFirstEpochs() {
	p.mu.Lock()
	p.repMu.Lock()
	now := p.clock.Now()
	if p.firstEpochsDue.IsZero() && p.epochsDirty && !p.epochsOnDisk {
		p.firstEpochsDue = now.Add(firstEpochsDelay)
	}
	if p.closed || !p.epochsDirty || p.epochsOnDisk || now.Before(p.firstEpochsDue) {
		p.repMu.Unlock()
		p.mu.Unlock()
		return
	}
	p.epochsSeq++
	seq, body := p.epochsSeq, p.epochs.Marshal()
	p.epochsDirty, p.epochsOnDisk = false, true
	p.repMu.Unlock()
	p.mu.Unlock()
	if err := p.writeEpochs(seq, body); err != nil {
		p.logger.Warn("leader epoch checkpoint failed; the next append writes it again", "err", err)
		p.repMu.Lock()
		p.epochsDirty = true // as after any failed write: the next append retries it
		p.repMu.Unlock()
	}
}

// firstEpochsDelay is how long a new partition's first leader epoch
// checkpoint waits after its first batches. Until it is written an open
// rebuilds the cache by reading every batch, which for a second's worth
// of appends costs little; written at once, its file and directory syncs
// land beside those of the first batches, on the leader and on every
// follower, just when a new topic's first acks=all produce waits for them.
const firstEpochsDelay = time.Second

// writeFirstEpochs writes, at close, the first checkpoint of a partition
// whose log holds batches (it is not empty) that none has covered yet: the
// next open reads it instead of every batch.
func (p *Partition) writeFirstEpochs(empty bool) error {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if !p.epochsDirty || p.epochsOnDisk || empty {
		return nil
	}
	return p.writeEpochsLocked()
}
