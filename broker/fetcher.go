package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
)

// The replica fetchers (node.Fetchers decides what each fetches): one
// goroutine per leader broker, with its own franz-go client to the
// leader's advertised address.

type fetchers struct {
	s  *Server
	fs *node.Fetchers

	mu      sync.Mutex // held by follow and close
	running map[*node.Fetcher]*running
}

func newFetchers(s *Server) *fetchers {
	fs := node.NewFetchers(s.cfg.NodeID)
	fs.SetThrottle(s.throttles.followerThrottle())
	return &fetchers{s: s, fs: fs, running: map[*node.Fetcher]*running{}}
}

// follow makes p fetch from leader, or from nobody when leader is this
// broker or none.
func (f *fetchers) follow(p *partition.Partition, leader int32) {
	// One follow at a time (the reconciler sets partitions up side by
	// side), so that a fetcher stopped here is one that was started.
	f.mu.Lock()
	defer f.mu.Unlock()
	started, stopped := f.fs.Follow(f.s.cfg.Clock.Now(), p, leader)
	if stopped != nil {
		f.stop(stopped)
	}
	if started != nil {
		f.start(started)
	}
}

// unfollow stops fetching partition k, which is being removed.
func (f *fetchers) unfollow(k partition.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stopped := f.fs.Unfollow(k); stopped != nil {
		f.stop(stopped)
	}
}

// running is one fetcher's goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *fetchers) start(nf *node.Fetcher) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	wake := make(chan struct{}, 1)
	nf.SetWake(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	f.running[nf] = r
	f.s.bg.Add(1)
	go func() {
		defer f.s.bg.Done()
		defer close(r.done)
		f.run(ctx, nf, wake)
	}()
}

func (f *fetchers) stop(nf *node.Fetcher) {
	r, ok := f.running[nf]
	delete(f.running, nf)
	if ok {
		r.cancel()
		<-r.done
	}
}

func (f *fetchers) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, nf := range f.fs.Close() {
		f.stop(nf)
	}
}

func (f *fetchers) run(ctx context.Context, nf *node.Fetcher, wake <-chan struct{}) {
	s := f.s
	var cl *kgo.Client
	var addr string
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for ctx.Err() == nil {
		req, sent := nf.Build(s.cfg.Clock.Now(), s.life.epoch.Load())
		s.log.Debug("replica fetch", "leader", nf.Leader(), "partitions", len(sent))
		if len(sent) == 0 {
			f.pause(ctx, nf.IdlePause(), wake)
			continue
		}
		a, ok := node.LeaderAddr(s.store.Image(), nf.Leader())
		if !ok {
			f.pause(ctx, node.ReplicaFetchBackoff, wake)
			continue
		}
		if cl == nil || a != addr {
			if cl != nil {
				cl.Close()
			}
			var err error
			if cl, err = kgo.NewClient(kgo.SeedBrokers(a), kgo.ClientID(fmt.Sprintf("minikafka-replica-%d", s.cfg.NodeID)),
				kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0)); err != nil {
				s.log.Warn("replica fetcher client", "leader", nf.Leader(), "err", err)
				cl = nil
				f.pause(ctx, node.ReplicaFetchBackoff, nil)
				continue
			}
			addr = a
		}
		rctx, cancel := context.WithTimeout(ctx, node.FetchTimeout(req))
		nf.BeginFlight(req, cancel)
		resp, err := cl.SeedBrokers()[0].Request(rctx, req)
		cancel()
		if pause := nf.EndFlight(err); err != nil {
			if ctx.Err() == nil && pause > 0 {
				s.log.Debug("replica fetch failed", "leader", nf.Leader(), "err", err)
				f.pause(ctx, pause, nil)
			}
			continue
		}
		nf.Handle(s.cfg.Clock.Now(), resp.(*kmsg.FetchResponse), sent, s.log)
		f.awaitSyncs(ctx, sent)
	}
}

// awaitSyncs waits, up to node.SyncAwait, until every partition of the
// fetch just handled has synced what it appended (sync=always): the next
// fetch then names them all with their new offsets, which is what moves
// their leaders' high watermarks.
func (f *fetchers) awaitSyncs(ctx context.Context, sent node.Sent) {
	ctx, cancel := withTimeout(ctx, f.s.cfg.Clock, node.SyncAwait)
	defer cancel()
	for _, p := range sent.SyncPending() {
		if p.WaitSynced(ctx) != nil && ctx.Err() != nil {
			return
		}
	}
}

// pause waits d on the clock, or until ctx ends; woken early by wake when
// it is not nil.
func (f *fetchers) pause(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	t := f.s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-wake:
	case <-ctx.Done():
	}
}
