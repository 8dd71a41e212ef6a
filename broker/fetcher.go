package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// Followers fetch from their leaders with Kafka's Fetch (v15: ReplicaState
// carries this broker's id and epoch), one fetcher per leader broker for
// every partition this broker follows there, as Kafka's replica fetcher
// threads. A fetcher asks each partition's Follower what to fetch
// (Partition.NextFetch: nothing while what it appended is not synced under
// sync=always), sends one Fetch for all of them, and hands each
// partition its answer (Partition.HandleFetch). A partition added (or
// given a new role) while a long poll is in flight interrupts it, polls
// stay short for a while after an addition, and a long poll lasts no
// longer than the nearest end of a partition's backoff: a partition
// created a moment after the fetcher's last request must not wait out the
// others' long poll before its first fetch (acks=all on a new topic would
// take up to a second).

const (
	// replicaFetchWait is the follower's long poll (replica.fetch.wait.max.ms).
	replicaFetchWait = 500 * time.Millisecond
	// replicaFetchBackoff is replica.fetch.backoff.ms.
	replicaFetchBackoff = 100 * time.Millisecond
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
	// syncPoll is how often a fetcher with nothing to send looks again:
	// its partitions are waiting for their own syncs.
	syncPoll = 2 * time.Millisecond
	// A partition added while a long poll is in flight interrupts it, up to
	// maxInterrupts a second (franz-go ends the connection of a cancelled
	// request). More additions than that are a burst (a broker opening
	// thousands of partitions at start, topics created faster than that):
	// the poll in flight is cut once more, and for addBurst after, polls
	// last at most addBurstWait, which takes each partition in within
	// milliseconds without an interrupt. Short polls are not the rule
	// because every poll names every partition of the fetcher.
	maxInterrupts = 20
	addBurstWait  = 10 * time.Millisecond
	addBurst      = time.Second
	// syncPendingWait bounds the long poll while a partition left out of
	// it waits for its sync (sync=always): once synced it fetches again,
	// and its leader's high watermark waits for that fetch.
	syncPendingWait = 5 * time.Millisecond
	// syncAwait bounds how long a fetcher waits for the syncs of what it
	// just appended before fetching again (a slow or stuck disk must not
	// stop the partitions that have nothing to sync).
	syncAwait = 100 * time.Millisecond
)

type fetchers struct {
	s *Server

	mu       sync.Mutex
	byLeader map[int32]*fetcher
	leaderOf map[partition.Key]int32
	closed   bool
}

func newFetchers(s *Server) *fetchers {
	return &fetchers{s: s, byLeader: map[int32]*fetcher{}, leaderOf: map[partition.Key]int32{}}
}

// follow makes p fetch from leader, or from nobody when leader is this
// broker or none.
func (fs *fetchers) follow(p *partition.Partition, leader int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return
	}
	k := p.Key()
	if old, ok := fs.leaderOf[k]; ok {
		if old == leader {
			fs.byLeader[leader].wakeUp()
			return
		}
		f := fs.byLeader[old]
		if f.remove(k) {
			delete(fs.byLeader, old)
			f.stop()
		}
		delete(fs.leaderOf, k)
	}
	if leader < 0 || leader == fs.s.cfg.NodeID {
		return
	}
	f, ok := fs.byLeader[leader]
	if !ok {
		f = newFetcher(fs.s, leader)
		fs.byLeader[leader] = f
	}
	f.add(p)
	fs.leaderOf[k] = leader
}

func (fs *fetchers) close() {
	fs.mu.Lock()
	fs.closed = true
	all := fs.byLeader
	fs.byLeader = map[int32]*fetcher{}
	fs.mu.Unlock()
	for _, f := range all {
		f.stop()
	}
}

// fetcher fetches every partition this broker follows on one leader.
type fetcher struct {
	s      *Server
	leader int32

	mu    sync.Mutex
	parts map[partition.Key]*partition.Partition
	// notBefore holds partitions back after an error, until that time.
	notBefore map[partition.Key]time.Time
	wake      chan struct{}
	// changed says a partition was added since the last build; interrupt
	// ends the fetch in flight, if any, and interrupted says it did.
	changed     bool
	interrupt   context.CancelFunc
	interrupted bool
	inFlightFor time.Duration // the long poll of the fetch in flight
	// interrupts counts the interrupts since windowStart; lastBurst is
	// when additions last came faster than maxInterrupts a second.
	interrupts  int
	windowStart time.Time
	lastBurst   time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

func newFetcher(s *Server, leader int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{
		s: s, leader: leader, parts: map[partition.Key]*partition.Partition{},
		notBefore: map[partition.Key]time.Time{}, wake: make(chan struct{}, 1),
		cancel: cancel, done: make(chan struct{}),
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(f.done)
		f.run(ctx)
	}()
	return f
}

func (f *fetcher) add(p *partition.Partition) {
	f.mu.Lock()
	f.parts[p.Key()] = p
	delete(f.notBefore, p.Key())
	f.changed = true
	if f.interrupt != nil && f.inFlightFor > addBurstWait {
		now := f.s.cfg.Clock.Now()
		if now.Sub(f.windowStart) >= time.Second {
			f.windowStart, f.interrupts = now, 0
		}
		if f.interrupts >= maxInterrupts {
			// A burst: the polls after this one are short (build), and
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
func (f *fetcher) remove(k partition.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, k)
	delete(f.notBefore, k)
	return len(f.parts) == 0
}

func (f *fetcher) wakeUp() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// sent is one partition of a fetch in flight.
type sent struct {
	part *partition.Partition
	req  replication.FetchRequest
}

func (f *fetcher) run(ctx context.Context) {
	var cl *kgo.Client
	var addr string
	afterInterrupt := false
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for ctx.Err() == nil {
		req, inFlight := f.build()
		f.s.log.Debug("replica fetch", "leader", f.leader, "partitions", len(inFlight))
		if len(inFlight) == 0 {
			f.pause(ctx, syncPoll, true)
			continue
		}
		a, ok := f.leaderAddr()
		if !ok {
			f.pause(ctx, replicaFetchBackoff, true)
			continue
		}
		if cl == nil || a != addr {
			if cl != nil {
				cl.Close()
			}
			var err error
			if cl, err = kgo.NewClient(kgo.SeedBrokers(a), kgo.ClientID(fmt.Sprintf("minikafka-replica-%d", f.s.cfg.NodeID)),
				kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0)); err != nil {
				f.s.log.Warn("replica fetcher client", "leader", f.leader, "err", err)
				cl = nil
				f.pause(ctx, replicaFetchBackoff, false)
				continue
			}
			addr = a
		}
		seeds := cl.SeedBrokers()
		rctx, cancel := context.WithTimeout(ctx, replicaFetchWait+5*time.Second)
		f.mu.Lock()
		if f.changed {
			// Added between build and here: a short poll, so that the next
			// build takes it in soon (building again at once could starve
			// under a stream of additions).
			req.MaxWaitMillis = min(req.MaxWaitMillis, int32(addBurstWait/time.Millisecond))
		}
		f.interrupt, f.interrupted = cancel, false
		f.inFlightFor = time.Duration(req.MaxWaitMillis) * time.Millisecond
		f.mu.Unlock()
		resp, err := seeds[0].Request(rctx, req)
		f.mu.Lock()
		interrupted := f.interrupted
		f.interrupt, f.interrupted = nil, false
		f.mu.Unlock()
		cancel()
		if err != nil {
			// franz-go ends the connection of a cancelled request, so the
			// fetch after an interrupted one may fail on it too: neither
			// waits out a backoff.
			retry := interrupted || afterInterrupt
			afterInterrupt = interrupted
			if ctx.Err() == nil && !retry {
				f.s.log.Debug("replica fetch failed", "leader", f.leader, "err", err)
				f.pause(ctx, replicaFetchBackoff, false)
			}
			continue
		}
		afterInterrupt = false
		f.handle(resp.(*kmsg.FetchResponse), inFlight)
		f.awaitSyncs(ctx, inFlight)
	}
}

// awaitSyncs waits, up to syncAwait, until every partition of the fetch
// just handled has synced what it appended (sync=always): the next fetch
// then names them all with their new offsets, which is what moves their
// leaders' high watermarks. The syncs run at once on the partitions' own
// loops, so this waits about one fsync; fetching without them would leave
// them out of the next long poll, and their acks=all producers waiting for
// it to end.
func (f *fetcher) awaitSyncs(ctx context.Context, inFlight map[partition.Key]sent) {
	ctx, cancel := withTimeout(ctx, f.s.cfg.Clock, syncAwait)
	defer cancel()
	for _, sn := range inFlight {
		if st, _ := sn.part.FollowerState(); st.SyncPending {
			if sn.part.WaitSynced(ctx) != nil && ctx.Err() != nil {
				return
			}
		}
	}
}

// pause waits d on the clock, or until ctx ends; woken early by a wakeUp
// when wakeable.
func (f *fetcher) pause(ctx context.Context, d time.Duration, wakeable bool) {
	t := f.s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	wake := f.wake
	if !wakeable {
		wake = nil
	}
	select {
	case <-t.C():
	case <-wake:
	case <-ctx.Done():
	}
}

// leaderAddr is the leader's advertised address from the metadata.
func (f *fetcher) leaderAddr() (string, bool) {
	b, ok := f.s.store.Image().Broker(f.leader)
	if !ok || b.Fenced {
		return "", false
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
}

// build makes the fetch for every partition that has one to send now.
func (f *fetcher) build() (*kmsg.FetchRequest, map[partition.Key]sent) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.s.cfg.NodeID, f.s.life.epoch.Load()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(replicaFetchWait/time.Millisecond), 1, replicaFetchResponseBytes
	req.SessionID, req.SessionEpoch = 0, -1
	inFlight := map[partition.Key]sent{}
	now := f.s.cfg.Clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = false
	wait := replicaFetchWait
	if now.Sub(f.lastBurst) < addBurst {
		wait = addBurstWait
	}
	for _, t := range f.notBefore {
		if d := t.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	byTopic := map[uuid.UUID]int{}
	for k, p := range f.parts {
		if now.Before(f.notBefore[k]) {
			continue
		}
		fr, ok := p.NextFetch()
		if !ok {
			if st, _ := p.FollowerState(); st.SyncPending {
				wait = min(wait, syncPendingWait)
			}
			continue
		}
		if fr.Leader != f.leader {
			continue
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
		rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = fr.LastFetchedEpoch, fr.LogStartOffset, replicaFetchBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		inFlight[k] = sent{part: p, req: fr}
	}
	req.MaxWaitMillis = int32(max(wait/time.Millisecond, 1))
	return req, inFlight
}

// handle gives each partition its part of the leader's answer.
func (f *fetcher) handle(resp *kmsg.FetchResponse, inFlight map[partition.Key]sent) {
	if resp.ErrorCode != 0 {
		f.s.log.Debug("replica fetch refused", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
		f.holdAll(inFlight)
		return
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := partition.Key{TopicID: rt.TopicID, Index: rp.Partition}
			sn, ok := inFlight[k]
			if !ok {
				continue
			}
			res := partition.FetchResult{
				Request: sn.req, Err: kerr.ErrorForCode(rp.ErrorCode),
				HighWatermark: rp.HighWatermark, LogStartOffset: rp.LogStartOffset, Records: rp.RecordBatches,
			}
			if rp.DivergingEpoch.Epoch >= 0 && rp.DivergingEpoch.EndOffset >= 0 {
				res.Diverging = &replication.EpochEnd{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset}
			}
			if rp.ErrorCode != 0 {
				f.s.log.Debug("replica fetch partition error", "partition", k.String(), "leader", f.leader, "err", res.Err)
			}
			err := sn.part.HandleFetch(res)
			switch {
			case err == nil:
			case partition.IsBackoff(err) && leaderBehind(res.Err):
				f.hold(k, metadataLagBackoff)
			case partition.IsBackoff(err), partition.IsNeedMetadata(err):
				f.hold(k, replicaFetchBackoff)
			default:
				f.s.log.Warn("applying a replica fetch", "partition", k.String(), "leader", f.leader, "err", err)
				f.hold(k, replicaFetchBackoff)
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

func (f *fetcher) hold(k partition.Key, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notBefore[k] = f.s.cfg.Clock.Now().Add(d)
}

func (f *fetcher) holdAll(inFlight map[partition.Key]sent) {
	for k := range inFlight {
		f.hold(k, replicaFetchBackoff)
	}
}
