package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/engine"
)

// lifecycle drives this broker's standing with the controller
// (node.Lifecycle: registration, heartbeats, controlled shutdown) on one
// goroutine, and its producer id blocks (node.ProducerIDs) on the
// goroutines of the InitProducerId requests that need one.
type lifecycle struct {
	s *Server

	mu   sync.Mutex
	l    *node.Lifecycle
	pids *node.ProducerIDs
	// pidsChanged is closed (and replaced) when a block request is answered.
	pidsChanged chan struct{}

	epoch    atomic.Int64  // l's epoch, for the goroutines that only read it
	previous int64         // the epoch of the last clean shutdown, -1 if it was not
	wake     chan struct{} // capacity 1: the loop looks at l again
	ready    chan struct{} // closed once registered and unfenced the first time
	released chan struct{} // closed once a controlled shutdown may end
	once     [2]sync.Once  // closes ready, released
}

// newLifecycle: previousEpoch is the epoch of the last clean shutdown (-1:
// none), dirID the data directory's id.
func newLifecycle(s *Server, previousEpoch int64, dirID uuid.UUID) *lifecycle {
	cfg := node.LifecycleConfig{
		NodeID: s.cfg.NodeID, ClusterID: s.cfg.ClusterID, Incarnation: uuid.New(), Rack: s.cfg.Rack,
		PreviousEpoch: previousEpoch, DurableAcks: s.cfg.EngineOptions.Sync == engine.SyncAlways, LogDir: dirID,
		HeartbeatInterval: s.cfg.Cluster.HeartbeatInterval, SessionTimeout: s.cfg.Cluster.SessionTimeout,
		Logger: s.log,
	}
	if !s.cfg.isVoter() {
		for _, v := range s.cfg.voters() {
			cfg.CheckVoters = append(cfg.CheckVoters, v.ID)
		}
	}
	return &lifecycle{
		s: s, l: node.NewLifecycle(cfg), previous: previousEpoch, pids: node.NewProducerIDs(s.cfg.NodeID), pidsChanged: make(chan struct{}),
		wake: make(chan struct{}, 1), ready: make(chan struct{}), released: make(chan struct{}),
	}
}

// run registers and heartbeats until ctx ends, or the broker can never
// serve (Server.Failed says why).
func (l *lifecycle) run(ctx context.Context) {
	s := l.s
	host, port := s.advertisedHostPort()
	l.mu.Lock()
	l.l.Start(host, port)
	l.mu.Unlock()
	for ctx.Err() == nil {
		changed := s.store.Changed()
		now := s.cfg.Clock.Now()
		l.mu.Lock()
		c, ok := l.l.Next(now, int64(s.store.Image().Offset()))
		wakeAt := l.l.NextWake()
		l.mu.Unlock()
		if ok {
			resp, err := s.ctlClient.call(ctx, c)
			if ctx.Err() != nil {
				return
			}
			if !l.answer(c, resp, err) {
				return
			}
			continue
		}
		l.wait(ctx, changed, wakeAt.Sub(now))
	}
}

// wait returns when the metadata changes, d passes (d <= 0: no timer),
// the loop is poked or ctx ends.
func (l *lifecycle) wait(ctx context.Context, changed <-chan struct{}, d time.Duration) {
	var timer <-chan time.Time
	if d > 0 {
		t := l.s.cfg.Clock.NewTimer(d)
		defer t.Stop()
		timer = t.C()
	}
	select {
	case <-changed:
	case <-timer:
	case <-l.wake:
	case <-ctx.Done():
	}
}

// answer applies one answer; false when the broker can never serve.
func (l *lifecycle) answer(c node.Call, resp kmsg.Response, err error) bool {
	s := l.s
	l.mu.Lock()
	out := l.l.Answer(s.cfg.Clock.Now(), c, resp, err)
	l.epoch.Store(l.l.Epoch())
	ready, released := l.l.Ready(), l.l.Released()
	l.mu.Unlock()
	if out.Fatal != nil {
		s.fail(out.Fatal)
		return false
	}
	if out.Standing {
		s.kickReconcile()
	}
	if ready {
		l.once[0].Do(func() { close(l.ready) })
	}
	if released {
		l.once[1].Do(func() { close(l.released) })
	}
	return true
}

func (l *lifecycle) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// controlledShutdown asks the controller to move this broker's
// leaderships away and waits until it says the broker may go (or gives up
// after a bound of heartbeats), or ctx ends.
func (l *lifecycle) controlledShutdown(ctx context.Context) {
	l.mu.Lock()
	l.l.BeginShutdown()
	released := l.l.Released()
	l.mu.Unlock()
	if released {
		l.once[1].Do(func() { close(l.released) })
		return
	}
	l.poke()
	select {
	case <-l.released:
	case <-ctx.Done():
		l.s.log.Warn("controlled shutdown did not finish in time; leaving anyway")
	}
}

// nextPID returns a producer id never handed out before, asking the
// controller for a block when this one is used up.
func (l *lifecycle) nextPID(ctx context.Context) (int64, error) {
	for {
		l.mu.Lock()
		id, ok := l.pids.Take()
		if ok {
			l.mu.Unlock()
			return id, nil
		}
		epoch := l.l.Epoch()
		c, send := l.pids.Next(epoch)
		changed := l.pidsChanged
		l.mu.Unlock()
		if epoch == 0 {
			return 0, fmt.Errorf("allocate producer ids: this broker is not registered yet: %w", kerr.CoordinatorNotAvailable)
		}
		if send {
			resp, err := l.s.ctlClient.call(ctx, c)
			l.mu.Lock()
			_, _, err = l.pids.Answer(resp, err)
			close(l.pidsChanged)
			l.pidsChanged = make(chan struct{})
			l.mu.Unlock()
			if err != nil {
				return 0, err
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, fmt.Errorf("allocate producer ids: %w: %w", ctx.Err(), kerr.CoordinatorNotAvailable)
		}
	}
}
