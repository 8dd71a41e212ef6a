package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// Replication between brokers runs the product's fetchers
// (node.Fetchers, one node.Fetcher per leader) and the product's answer to
// a follower's fetch (node.ServeFollower), with Kafka's Fetch requests and
// responses carried by the simulated network. A fetch session here is what
// a fetcher's goroutine does in the broker: build, send, hand the answer
// over, wait for the syncs of what it appended, build again; an interrupt
// (a partition added during a long poll) abandons the fetch in flight. At
// the leader, a fetch with nothing to send parks for its long poll until a
// partition's log end passes its offset, or the poll ends.

const (
	// fetchSlackMs is how long past its long poll a fetch waits for an
	// answer before the session counts it lost (the network model's lost
	// connection; the broker's franz-go request waits longer).
	fetchSlackMs = 300
	// fetchMaxBytes bounds a leader's answer, as the broker's
	// Config.FetchMaxBytes does, unless Options.FetchMaxBytes says.
	fetchMaxBytes = 16 << 10
)

var errInterrupted = errors.New("sim: fetch interrupted")

// discard is the log of the shell's pieces: the trace says what matters.
var discard = slog.New(slog.DiscardHandler)

// fetchSession drives one node.Fetcher.
type fetchSession struct {
	b       *broker
	f       *node.Fetcher
	flight  int  // the fetch in flight's number: an answer to another is dropped
	busy    bool // a fetch is in flight
	sent    node.Sent
	syncing bool  // waiting for the syncs of what the last answer appended
	until   int64 // the end of that wait
	retryAt int64 // no fetch before this tick
	stopped bool
}

// follow makes p fetch from leader (nobody when it is this broker or none).
func (b *broker) follow(p *partition.Partition, leader int32) {
	started, stopped := b.fetchers.Follow(b.s.time(), p, leader)
	if stopped != nil {
		b.stopSession(stopped)
	}
	if started != nil {
		fs := &fetchSession{b: b, f: started}
		started.SetWake(func() { b.later(0, "fetch-wake", fs.step) })
		b.sessions[started] = fs
		fs.step()
	}
}

func (b *broker) stopSession(f *node.Fetcher) {
	if fs := b.sessions[f]; fs != nil {
		fs.stopped = true
		fs.flight++
		delete(b.sessions, f)
	}
}

func (b *broker) sortedSessions() []*fetchSession {
	out := make([]*fetchSession, 0, len(b.sessions))
	for _, fs := range b.sessions {
		out = append(out, fs)
	}
	slices.SortFunc(out, func(x, y *fetchSession) int { return int(x.f.Leader() - y.f.Leader()) })
	return out
}

// step sends the next fetch if one is due.
func (fs *fetchSession) step() {
	b, s := fs.b, fs.b.s
	if fs.stopped || fs.busy || !b.up {
		return
	}
	if fs.syncing {
		if s.now < fs.until && len(fs.sent.SyncPending()) > 0 {
			return // the sync's completion settles the broker again
		}
		fs.syncing = false
	}
	if s.now < fs.retryAt {
		return
	}
	now := s.time()
	req, sent := fs.f.Build(now, b.life.Epoch())
	if len(sent) == 0 {
		if at := fs.f.NextWake(now); !at.IsZero() {
			b.later(at.Sub(now).Milliseconds()+1, "fetch-backoff", fs.step)
		}
		return
	}
	if _, ok := node.LeaderAddr(b.store.Image(), fs.f.Leader()); !ok {
		fs.pause(node.ReplicaFetchBackoff.Milliseconds())
		return
	}
	fs.busy, fs.sent = true, sent
	fs.flight++
	flight, leader, gen := fs.flight, fs.f.Leader(), b.gen
	fs.f.BeginFlight(req, func() {
		// Called under the fetcher's lock, from the reconciler: the
		// abandoned fetch ends as an event of its own.
		b.later(0, "fetch-interrupt", func() { fs.ended(flight, nil, errInterrupted) })
	})
	s.rpc(b.id, leader, "fetch", int64(req.MaxWaitMillis)+fetchSlackMs, func(reply func(any)) {
		s.brokers[leader-1].serveReplicaFetch(req, func(resp *kmsg.FetchResponse) { reply(resp) })
	}, func(resp any) {
		if !b.up || b.gen != gen {
			return // the process that sent it is gone: its fetcher with it
		}
		r, _ := resp.(*kmsg.FetchResponse)
		var err error
		if r == nil {
			err = errNoAnswer
		}
		fs.ended(flight, r, err)
	})
}

// ended is the end of fetch number flight: an answer, or an error.
func (fs *fetchSession) ended(flight int, resp *kmsg.FetchResponse, err error) {
	b := fs.b
	if fs.stopped || flight != fs.flight || !b.up {
		return
	}
	fs.busy = false
	fs.flight++
	if pause := fs.f.EndFlight(err); err != nil {
		fs.pause(pause.Milliseconds())
		return
	}
	fs.f.Handle(b.s.time(), resp, fs.sent, discard)
	for _, r := range sortedReplicas(b.replicas) {
		r.observe()
		if _, ok := fs.sent[r.tp.key()]; ok {
			last, _ := r.p.EndOffsetForEpoch(math.MaxInt32)
			b.s.checks.epochs.ahead(b.s, r.view(), last)
		}
	}
	fs.syncing, fs.until = true, b.s.now+node.SyncAwait.Milliseconds()
	b.later(node.SyncAwait.Milliseconds(), "fetch-sync-wait", fs.step)
	b.settle()
}

func (fs *fetchSession) pause(ms int64) {
	fs.retryAt = fs.b.s.now + ms
	fs.b.later(ms, "fetch-backoff", fs.step)
}

// parkedFetch is a follower's fetch waiting at its leader.
type parkedFetch struct {
	req      *kmsg.FetchRequest
	targets  []node.Target
	deadline int64
	reply    func(*kmsg.FetchResponse)
}

// serveReplicaFetch answers a follower's fetch at this broker, as the
// broker's Fetch handler does: at once when there is something to send,
// otherwise once a partition has data or the long poll ends.
func (b *broker) serveReplicaFetch(req *kmsg.FetchRequest, reply func(*kmsg.FetchResponse)) {
	img := b.store.Image()
	targets := node.ResolveTargets(img, req)
	for i := range targets {
		t := &targets[i]
		if t.Err == nil {
			t.Part, t.Err = node.LookupPartition(b.parts, img, t.Topic, t.Req.Partition)
		}
	}
	p := &parkedFetch{req: req, targets: targets, deadline: b.s.now + int64(req.MaxWaitMillis), reply: reply}
	if !b.answer(p, false) {
		b.parked = append(b.parked, p)
		b.later(int64(req.MaxWaitMillis), "fetch-wait", b.settle)
	}
	b.settle()
}

// answer answers p unless it has nothing to send and may wait (last is
// false): then it reports false.
func (b *broker) answer(p *parkedFetch, last bool) bool {
	replica, epoch := node.ReplicaOf(p.req)
	resp := p.req.ResponseKind().(*kmsg.FetchResponse)
	got, news, failed := node.ServeFollower(resp, p.targets, replica, epoch, b.s.opts.fetchMaxBytes(), b.s.time(), nil)
	for _, f := range failed {
		b.s.tracef("b%d serving a follower: %s-%d: %v", b.id, f.Target.Topic, f.Target.Req.Partition, f.Err)
	}
	for _, r := range sortedReplicas(b.replicas) {
		r.observe()
	}
	if !last && !node.AnswerFollowerNow(p.req, got, news) {
		return false
	}
	p.reply(resp)
	return true
}

// wakeParked answers the parked fetches that have data or waited enough.
func (b *broker) wakeParked() {
	if len(b.parked) == 0 {
		return
	}
	parked := b.parked
	b.parked = nil
	for _, p := range parked {
		if node.FollowerDataReady(p.targets) || b.s.now >= p.deadline {
			b.answer(p, true)
			continue
		}
		b.parked = append(b.parked, p)
	}
}

// proposeISR is the partitions' ProposeISR hook, as the broker's: the
// leader's ISR change goes to the controller as an AlterPartition
// (node.AlterPartitionRequest) and its answer back to the Leader that made
// it. It runs under the partition's lock and only sends.
func (b *broker) proposeISR(p *partition.Partition, prop replication.ProposeISR) {
	pgen, gen := p.ProposalGen(), b.gen
	k := tp{p.Key().TopicID, p.Key().Index}
	req := node.AlterPartitionRequest(b.id, b.life.Epoch(), p, prop)
	b.s.tracef("b%d %s proposes isr %v at partition epoch %d", b.id, k, prop.NewISR, prop.PartitionEpoch)
	b.later(0, "alter-partition", func() {
		b.call(node.Call{Req: req, To: node.ToController, Timeout: node.AlterPartitionTimeout}, func(resp kmsg.Response, err error) {
			r := b.replicas[k]
			if b.gen != gen || r == nil || r.p != p {
				return
			}
			res := node.AlterPartitionResult(k.part, prop, resp, err)
			res.Now = b.s.time()
			b.s.tracef("b%d %s isr proposal answered: %v %v at partition epoch %d", b.id, k, res.Err, res.ISR, res.PartitionEpoch)
			p.AlterPartitionResult(pgen, res)
			b.process()
			b.settle()
		})
	})
}

// kafkaErr is the Kafka error an error wraps, as the wire carries it (an
// error code); an error without one is UNKNOWN_SERVER_ERROR.
func kafkaErr(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// drain answers what waits on a partition that was just removed.
func (r *replica) drain() {
	r.resolveWaiters()
	r.b.wakeParked()
}

func (r *replica) String() string { return fmt.Sprintf("b%d %s", r.b.id, r.tp) }
