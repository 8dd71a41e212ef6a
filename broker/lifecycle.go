package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
)

// lifecycle is this broker's standing with the controller, as Kafka's
// BrokerLifecycleManager: every process start registers with a fresh
// incarnation id and gets a broker epoch; heartbeats every
// HeartbeatInterval carry the metadata offset this broker has applied, and
// the controller unfences it once that offset reaches its registration;
// a broker whose epoch the controller no longer knows registers again. A
// controlled shutdown asks the controller to move its leaderships first.
type lifecycle struct {
	s           *Server
	incarnation uuid.UUID

	epoch    atomic.Int64 // the registered broker epoch; 0 before
	fenced   atomic.Bool
	shutdown atomic.Bool // a controlled shutdown is under way
	released chan struct{}
	once     sync.Once // closes released

	ready  chan struct{} // closed once registered and unfenced the first time
	ready1 sync.Once

	refusedSince time.Time // the first DUPLICATE_BROKER_REGISTRATION in a row
}

func newLifecycle(s *Server) *lifecycle {
	l := &lifecycle{s: s, incarnation: uuid.New(), released: make(chan struct{}), ready: make(chan struct{})}
	l.fenced.Store(true)
	return l
}

// run registers and heartbeats until ctx ends.
func (l *lifecycle) run(ctx context.Context) {
	for ctx.Err() == nil {
		if l.epoch.Load() == 0 {
			if err := l.register(ctx); err != nil {
				if ctx.Err() == nil {
					l.s.log.Warn("broker registration failed; retrying", "err", err)
					l.s.pause(l.s.cfg.Cluster.HeartbeatInterval)
				}
				continue
			}
		}
		sent := l.heartbeat(ctx)
		if epoch := l.epoch.Load(); epoch != 0 {
			l.waitNext(ctx, epoch, sent)
		}
	}
}

// waitNext waits a heartbeat interval; but a fenced broker whose last
// heartbeat was sent before its metadata reached its registration
// heartbeats again the moment it does, since that is what the controller
// unfences it for (a restart is serving sooner).
func (l *lifecycle) waitNext(ctx context.Context, epoch, sent int64) {
	if !l.fenced.Load() || sent >= epoch {
		l.wait(ctx, l.s.cfg.Cluster.HeartbeatInterval)
		return
	}
	t := l.s.cfg.Clock.NewTimer(l.s.cfg.Cluster.HeartbeatInterval)
	defer t.Stop()
	for {
		changed := l.s.store.Changed()
		if int64(l.s.store.Image().Offset()) >= epoch {
			return
		}
		select {
		case <-changed:
		case <-t.C():
			return
		case <-ctx.Done():
			return
		}
	}
}

func (l *lifecycle) wait(ctx context.Context, d time.Duration) {
	t := l.s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

func (l *lifecycle) register(ctx context.Context) error {
	s := l.s
	host, port := s.advertisedHostPort()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.ClusterID, req.IncarnationID = s.cfg.NodeID, s.cfg.ClusterID, l.incarnation
	req.PreviousBrokerEpoch = -1
	lst := kmsg.NewBrokerRegistrationRequestListener()
	lst.Name, lst.Host, lst.Port = cluster.ListenerName, host, uint16(port)
	req.Listeners = append(req.Listeners, lst)
	if s.cfg.Rack != "" {
		req.Rack = &s.cfg.Rack
	}
	if s.cfg.EngineOptions.Sync == engine.SyncAlways {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = cluster.FeatureDurableAcks, 1, 1
		req.Features = append(req.Features, f)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := l.checkVoters(ctx); err != nil {
		s.fail(err) // retrying cannot help
		return err
	}
	r, err := s.ctlClient.request(ctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		err = fmt.Errorf("register broker %d: %w", s.cfg.NodeID, err)
		switch {
		case errors.Is(err, kerr.InconsistentClusterID):
			s.fail(err) // retrying cannot help
		case errors.Is(err, kerr.DuplicateBrokerRegistration):
			// Another live process has this node id; or this process's
			// previous incarnation, whose session has not expired yet. A
			// refusal that outlasts a session is the former.
			now := s.cfg.Clock.Now()
			if l.refusedSince.IsZero() {
				l.refusedSince = now
			}
			if now.Sub(l.refusedSince) > s.cfg.Cluster.SessionTimeout*3/2 {
				s.fail(fmt.Errorf("%w: another live broker uses node id %d", err, s.cfg.NodeID))
			}
		}
		return err
	}
	l.epoch.Store(resp.BrokerEpoch)
	l.refusedSince = time.Time{}
	s.log.Info("registered with the controller", "node", s.cfg.NodeID, "epoch", resp.BrokerEpoch, "incarnation", l.incarnation)
	s.kickReconcile()
	return nil
}

// checkVoters, on a broker outside the quorum, asks the first voter that
// answers which voters the quorum has, and returns an error when they are
// not the ones -controllers names. Voters check one another in their
// connections' handshake; a broker that only sends them requests would
// otherwise try the voters it was given forever, never finding a leader
// that is not among them. No voter answering is not an error: the check
// waits for the next attempt.
func (l *lifecycle) checkVoters(ctx context.Context) error {
	s := l.s
	if s.cfg.isVoter() {
		return nil
	}
	var want []int32
	for _, v := range s.cfg.voters() {
		want = append(want, v.ID)
	}
	slices.Sort(want)
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = clusterMetadataTopic
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	for _, id := range want {
		r, err := s.ctlClient.send(ctx, id, req)
		if err != nil {
			continue
		}
		got := quorumVoters(r.(*kmsg.DescribeQuorumResponse))
		if got == nil {
			continue
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("broker: -controllers names the voters %v, but controller %d says the quorum's voters are %v: give every node the same -controllers list", want, id, got)
		}
		return nil
	}
	return nil
}

// quorumVoters is the sorted voter ids a DescribeQuorum answer lists for
// the metadata partition, nil when it lists none.
func quorumVoters(r *kmsg.DescribeQuorumResponse) []int32 {
	var out []int32
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if t.Topic != clusterMetadataTopic || p.Partition != 0 {
				continue
			}
			for _, v := range p.CurrentVoters {
				out = append(out, v.ReplicaID)
			}
		}
	}
	slices.Sort(out)
	return out
}

// heartbeat sends one heartbeat and applies its answer; it returns the
// metadata offset it reported (-1 when it sent none).
func (l *lifecycle) heartbeat(ctx context.Context) int64 {
	s := l.s
	epoch := l.epoch.Load()
	if epoch == 0 {
		return -1
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = s.cfg.NodeID, epoch
	req.CurrentMetadataOffset = int64(s.store.Image().Offset())
	sent := req.CurrentMetadataOffset
	req.WantShutdown = l.shutdown.Load()
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.Cluster.SessionTimeout, time.Second))
	defer cancel()
	r, err := s.ctlClient.request(ctx, req)
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.log.Warn("heartbeat failed", "err", err)
		}
		return sent
	}
	resp := r.(*kmsg.BrokerHeartbeatResponse)
	switch code := resp.ErrorCode; {
	case code == kerr.StaleBrokerEpoch.Code || code == kerr.BrokerIDNotRegistered.Code:
		s.log.Warn("the controller no longer knows this broker's epoch; registering again", "epoch", epoch)
		l.epoch.CompareAndSwap(epoch, 0)
		return sent
	case code != 0:
		s.log.Debug("heartbeat refused", "err", kerr.ErrorForCode(code))
		return sent
	}
	if was := l.fenced.Swap(resp.IsFenced); was != resp.IsFenced {
		s.log.Info("broker state", "fenced", resp.IsFenced, "epoch", epoch)
		s.kickReconcile()
	}
	if !resp.IsFenced {
		l.ready1.Do(func() { close(l.ready) })
	}
	if resp.ShouldShutdown {
		l.once.Do(func() { close(l.released) })
	}
	return sent
}

// controlledShutdown asks the controller to move this broker's
// leaderships away and waits until it says the broker may go, or ctx ends.
// Between two heartbeats it waits for this broker's metadata to move (the
// controller's answer depends on it), at most a heartbeat interval.
func (l *lifecycle) controlledShutdown(ctx context.Context) {
	if l.epoch.Load() == 0 {
		return
	}
	l.shutdown.Store(true)
	for range maxShutdownHeartbeats {
		changed := l.s.store.Changed()
		l.heartbeat(ctx)
		select {
		case <-l.released:
			return
		case <-ctx.Done():
			l.s.log.Warn("controlled shutdown did not finish in time; leaving anyway")
			return
		default:
		}
		t := l.s.cfg.Clock.NewTimer(l.s.cfg.Cluster.HeartbeatInterval)
		select {
		case <-changed:
		case <-t.C():
		case <-ctx.Done():
		}
		t.Stop()
	}
	l.s.log.Warn("the controller did not release this broker; leaving anyway")
}

// maxShutdownHeartbeats bounds a controlled shutdown's heartbeats, for a
// clock that does not move (tests) as much as for a controller that never
// answers.
const maxShutdownHeartbeats = 40
