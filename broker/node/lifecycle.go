package node

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// Lifecycle is a broker's standing with the controller, as Kafka's
// BrokerLifecycleManager: every process start registers with a fresh
// incarnation id and gets a broker epoch; heartbeats every
// HeartbeatInterval carry the metadata offset the broker has applied, and
// the controller unfences it once that offset reaches its registration;
// a broker whose epoch the controller no longer knows registers again. A
// controlled shutdown heartbeats with WantShutdown until the controller
// has moved the broker's leaderships and says it may go.
//
// A broker that is not a voter first asks a voter which voters the quorum
// has (DescribeQuorum) and stops for good when they are not the ones it
// was given: voters check one another in their connections' handshake, and
// a broker that only sends them requests would otherwise look for a leader
// among the wrong nodes forever.
//
// The driver asks Next for the call to make, makes it, and hands the
// answer to Answer; it asks again at NextWake, when the metadata image
// moves, and after each answer. One call is in flight at a time.
type Lifecycle struct {
	cfg LifecycleConfig
	log *slog.Logger

	host string
	port int32

	started  bool
	busy     bool
	epoch    int64 // 0: not registered
	fenced   bool
	ready    bool // unfenced once, at least
	shutdown bool
	released bool
	beats    int   // heartbeats since the shutdown began
	sent     int64 // the metadata offset the last heartbeat reported
	nextAt   time.Time
	// checked: a voter confirmed the quorum's voters; asked: this
	// registration attempt asked one (answered or not).
	checked, asked bool
	turn           int
	refusedSince   time.Time // the first DUPLICATE_BROKER_REGISTRATION in a row
	refusalSaid    bool      // the long refusal was logged
}

// LifecycleConfig configures a Lifecycle.
type LifecycleConfig struct {
	NodeID      int32
	ClusterID   string
	Incarnation uuid.UUID
	Rack        string
	// DurableAcks: this broker acknowledges only what it has synced
	// (sync=always), as the feature it registers with says.
	DurableAcks bool
	// LogDir is the id of its data directory, made with the directory.
	LogDir uuid.UUID
	// PreviousEpoch is the broker epoch this node had when it last shut
	// down cleanly, -1 when its last stop was not clean (a crash, a kill):
	// the controller then removes it from every ELR (KIP-966), since it
	// may have lost what it had not synced.
	PreviousEpoch int64
	// CheckVoters, for a broker that is not a voter, are the voters it was
	// given; nil for a voter.
	CheckVoters       []int32
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	Logger            *slog.Logger
}

// Timeouts of the lifecycle's calls.
const (
	registerTimeout    = 10 * time.Second
	checkVotersTimeout = 5 * time.Second
	// maxShutdownHeartbeats bounds a controlled shutdown: a controller that
	// never releases the broker does not keep it for good.
	maxShutdownHeartbeats = 40
)

// clusterMetadataTopic is KRaft's metadata log topic.
const clusterMetadataTopic = "__cluster_metadata"

// NewLifecycle returns the lifecycle of one process start.
func NewLifecycle(cfg LifecycleConfig) *Lifecycle {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Lifecycle{cfg: cfg, log: cfg.Logger, fenced: true, sent: -1, checked: cfg.CheckVoters == nil}
}

// Start begins registering, with the listener clients are told to use.
func (l *Lifecycle) Start(host string, port int32) { l.host, l.port, l.started = host, port, true }

// Epoch is the registered broker epoch, 0 before registration.
func (l *Lifecycle) Epoch() int64 { return l.epoch }

// Fenced reports whether the controller last said this broker is fenced.
func (l *Lifecycle) Fenced() bool { return l.fenced }

// Ready reports whether the broker has been registered and unfenced once.
func (l *Lifecycle) Ready() bool { return l.ready }

// ShuttingDown reports whether a controlled shutdown has begun.
func (l *Lifecycle) ShuttingDown() bool { return l.shutdown }

// Released reports whether a controlled shutdown may end: the controller
// said so, or it did not within maxShutdownHeartbeats.
func (l *Lifecycle) Released() bool { return l.released }

// Standing is what the reconciler needs of the lifecycle.
func (l *Lifecycle) Standing() Standing { return Standing{Epoch: l.epoch, Fenced: l.fenced} }

// BeginShutdown starts a controlled shutdown: the next heartbeats say
// WantShutdown. A broker never registered is released at once.
func (l *Lifecycle) BeginShutdown() {
	if l.shutdown {
		return
	}
	l.shutdown = true
	l.beats = 0
	l.nextAt = time.Time{}
	if l.epoch == 0 {
		l.released = true
	}
}

// NextWake is when Next may have a call that it has not now (the metadata
// moving may bring one sooner).
func (l *Lifecycle) NextWake() time.Time { return l.nextAt }

// Next is the call to make now, if any, given the metadata offset this
// broker has applied.
func (l *Lifecycle) Next(now time.Time, metadataOffset int64) (Call, bool) {
	if !l.started || l.busy || l.released {
		return Call{}, false
	}
	if l.epoch == 0 {
		if now.Before(l.nextAt) {
			return Call{}, false
		}
		l.busy = true
		if !l.checked && !l.asked {
			l.asked = true
			return l.describeQuorum(), true
		}
		l.asked = false
		return Call{Req: l.registration(), To: ToController, Timeout: registerTimeout, Attempt: l.attempt()}, true
	}
	due := !now.Before(l.nextAt) ||
		// A fenced broker whose last heartbeat predates its metadata
		// reaching its registration heartbeats the moment it does: that
		// is what the controller unfences it for.
		(l.fenced && l.sent < l.epoch && metadataOffset >= l.epoch) ||
		// In a controlled shutdown the controller's answer depends on
		// this broker's metadata: ask again as it moves.
		(l.shutdown && metadataOffset > l.sent)
	if !due {
		return Call{}, false
	}
	l.busy = true
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = l.cfg.NodeID, l.epoch
	req.CurrentMetadataOffset = metadataOffset
	req.WantShutdown = l.shutdown
	return Call{Req: req, To: ToController, Timeout: max(l.cfg.SessionTimeout, time.Second), Attempt: l.attempt()}, true
}

// attempt bounds one try of a lifecycle call at one voter: two heartbeat
// intervals, so that a broker whose controller died reaches the new one
// within the grace it gives every broker before fencing it
// (cluster.DefaultFailoverGrace: three heartbeats).
func (l *Lifecycle) attempt() time.Duration {
	return max(2*l.cfg.HeartbeatInterval, 100*time.Millisecond)
}

func (l *Lifecycle) registration() *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.ClusterID, req.IncarnationID = l.cfg.NodeID, l.cfg.ClusterID, l.cfg.Incarnation
	req.PreviousBrokerEpoch = l.cfg.PreviousEpoch
	req.LogDirs = [][16]byte{l.cfg.LogDir}
	lst := kmsg.NewBrokerRegistrationRequestListener()
	lst.Name, lst.Host, lst.Port = cluster.ListenerName, l.host, uint16(l.port)
	req.Listeners = append(req.Listeners, lst)
	if l.cfg.Rack != "" {
		rack := l.cfg.Rack
		req.Rack = &rack
	}
	if l.cfg.DurableAcks {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = cluster.FeatureDurableAcks, 1, 1
		req.Features = append(req.Features, f)
	}
	return req
}

func (l *Lifecycle) describeQuorum() Call {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = clusterMetadataTopic
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	to := l.cfg.CheckVoters[l.turn%len(l.cfg.CheckVoters)]
	l.turn++
	return Call{Req: req, To: to, Timeout: checkVotersTimeout}
}

// LifecycleOutcome is what an answer changed.
type LifecycleOutcome struct {
	// Standing: the broker epoch or fencing changed; the reconciler must
	// run again.
	Standing bool
	// Fatal: the broker can never serve (the controller is of another
	// cluster, the voters are not the ones it was given). The program
	// should exit.
	Fatal error
}

// Answer applies the answer to the call Next returned: resp, or err when
// none came.
func (l *Lifecycle) Answer(now time.Time, c Call, resp kmsg.Response, err error) LifecycleOutcome {
	l.busy = false
	switch req := c.Req.(type) {
	case *kmsg.DescribeQuorumRequest:
		return l.votersAnswered(c.To, resp, err)
	case *kmsg.BrokerRegistrationRequest:
		return l.registered(now, resp, err)
	case *kmsg.BrokerHeartbeatRequest:
		return l.heartbeatAnswered(now, req, resp, err)
	}
	panic(fmt.Sprintf("node: the lifecycle never made a %T", c.Req))
}

func (l *Lifecycle) votersAnswered(voter int32, resp kmsg.Response, err error) LifecycleOutcome {
	r, ok := resp.(*kmsg.DescribeQuorumResponse)
	if err != nil || !ok {
		return LifecycleOutcome{} // no voter answering is not an error: the next attempt asks again
	}
	got := QuorumVoters(r)
	if got == nil {
		return LifecycleOutcome{}
	}
	want := slices.Sorted(slices.Values(l.cfg.CheckVoters))
	if !slices.Equal(got, want) {
		return LifecycleOutcome{Fatal: fmt.Errorf("broker: -controllers names the voters %v, but controller %d says the quorum's voters are %v: give every node the same -controllers list", want, voter, got)}
	}
	l.checked = true
	return LifecycleOutcome{}
}

func (l *Lifecycle) registered(now time.Time, resp kmsg.Response, err error) LifecycleOutcome {
	l.nextAt = now.Add(l.cfg.HeartbeatInterval)
	r, ok := resp.(*kmsg.BrokerRegistrationResponse)
	if err == nil && !ok {
		err = fmt.Errorf("answered with %T", resp)
	}
	if err == nil {
		err = kerr.ErrorForCode(r.ErrorCode)
	}
	if err != nil {
		err = fmt.Errorf("register broker %d: %w", l.cfg.NodeID, err)
		switch {
		case errors.Is(err, kerr.InconsistentClusterID):
			return LifecycleOutcome{Fatal: err}
		case errors.Is(err, kerr.DuplicateBrokerRegistration):
			// This process's previous incarnation, whose session has not
			// expired yet; or another live process with this node id. The
			// registration is retried for as long as it is refused, as
			// Kafka's brokers do: controller failovers grant every session
			// a grace, so a restart amid them can be refused for several
			// session timeouts, and giving up there would take a healthy
			// broker down. A refusal that outlasts a few sessions is said
			// once, loudly, for the operator who started two brokers with
			// one id.
			if l.refusedSince.IsZero() {
				l.refusedSince, l.refusalSaid = now, false
			}
			if !l.refusalSaid && now.Sub(l.refusedSince) > 3*l.cfg.SessionTimeout {
				l.refusalSaid = true
				l.log.Error("registration refused for longer than three session timeouts: is another live broker using this node id?",
					"node", l.cfg.NodeID, "refused_for", now.Sub(l.refusedSince), "err", err)
			}
		}
		l.log.Warn("broker registration failed; retrying", "err", err)
		return LifecycleOutcome{}
	}
	l.epoch, l.sent, l.nextAt = r.BrokerEpoch, -1, time.Time{} // heartbeat at once
	l.refusedSince = time.Time{}
	l.log.Info("registered with the controller", "node", l.cfg.NodeID, "epoch", r.BrokerEpoch, "incarnation", l.cfg.Incarnation)
	return LifecycleOutcome{Standing: true}
}

func (l *Lifecycle) heartbeatAnswered(now time.Time, req *kmsg.BrokerHeartbeatRequest, resp kmsg.Response, err error) LifecycleOutcome {
	l.nextAt = now.Add(l.cfg.HeartbeatInterval)
	if l.shutdown && !req.WantShutdown {
		l.nextAt = time.Time{} // the shutdown began while it was out: say so at once
	}
	l.sent = max(l.sent, req.CurrentMetadataOffset)
	if req.WantShutdown {
		if l.beats++; l.beats >= maxShutdownHeartbeats && !l.released {
			l.log.Warn("the controller did not release this broker; leaving anyway")
			l.released = true
		}
	}
	if req.BrokerEpoch != l.epoch {
		return LifecycleOutcome{} // an answer for an epoch this broker has left
	}
	r, ok := resp.(*kmsg.BrokerHeartbeatResponse)
	if err != nil || !ok {
		l.log.Warn("heartbeat failed", "err", err)
		return LifecycleOutcome{}
	}
	switch code := r.ErrorCode; {
	case code == kerr.StaleBrokerEpoch.Code || code == kerr.BrokerIDNotRegistered.Code:
		l.log.Warn("the controller no longer knows this broker's epoch; registering again", "epoch", l.epoch)
		l.epoch, l.nextAt = 0, time.Time{}
		return LifecycleOutcome{Standing: true}
	case code != 0:
		l.log.Debug("heartbeat refused", "err", kerr.ErrorForCode(code))
		return LifecycleOutcome{}
	}
	out := LifecycleOutcome{}
	if l.fenced != r.IsFenced {
		l.fenced = r.IsFenced
		l.log.Info("broker state", "fenced", r.IsFenced, "epoch", l.epoch)
		out.Standing = true
	}
	if !r.IsFenced {
		l.ready = true
	}
	if r.ShouldShutdown && l.shutdown {
		l.released = true
	}
	return out
}

// QuorumVoters is the sorted voter ids a DescribeQuorum answer lists for
// the metadata partition, nil when it lists none.
func QuorumVoters(r *kmsg.DescribeQuorumResponse) []int32 {
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
