package cluster

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/clock"
)

// Log is the replicated log the controller writes through (the quorum).
type Log interface {
	// Propose commits payload and returns its index once the entry is
	// applied to the Store.
	Propose(ctx context.Context, payload []byte) (uint64, error)
	// Active reports whether this node leads the quorum and may decide.
	Active() bool
	// Leader is the quorum leader's node id (0: unknown) and its term.
	Leader() (id uint64, term uint64)
}

// ErrNotController: this node is not the active controller. Callers send
// the request to another controller (kerr.NotController on the wire).
var ErrNotController = fmt.Errorf("cluster: not the active controller: %w", kerr.NotController)

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	NodeID    int32
	ClusterID string
	Settings  Settings
	Log       Log
	Store     *Store
	Clock     clock.Clock
	// Seed seeds the controller's random choices (topic ids, placement).
	// Zero draws a seed from crypto/rand: a process that restarts must not
	// repeat the topic ids it made before (the simulator, which replays a
	// run, gives a seed per incarnation instead).
	Seed uint64
	// SessionTimeout fences a broker that has not heartbeat for that long
	// (Kafka's broker.session.timeout.ms).
	SessionTimeout time.Duration
	// FailoverGrace is how long a newly active controller waits for a
	// broker's first heartbeat before fencing it: a broker that sent none
	// since the failover is most likely the one whose death caused it.
	FailoverGrace time.Duration
	// TickInterval is how often sessions are checked; RebalanceInterval
	// how often leaderships go back to preferred replicas.
	TickInterval      time.Duration
	RebalanceInterval time.Duration
	Logger            *slog.Logger
}

// Defaults of ControllerConfig.
const (
	DefaultSessionTimeout    = 3 * time.Second
	DefaultFailoverGrace     = time.Second
	DefaultTickInterval      = 100 * time.Millisecond
	DefaultRebalanceInterval = 2 * time.Second
)

// Controller is the shell around the decisions of this package on a
// controller node: it serializes them, proposes their records to the Log,
// keeps the brokers' sessions (in memory, on the active controller only,
// as Kafka does) and answers the controller APIs (Handle).
type Controller struct {
	cfg ControllerConfig
	log *slog.Logger

	// mu serializes decisions: each is made on the image that every
	// decision before it has produced.
	mu        sync.Mutex
	rnd       *rand.Rand
	readyTerm uint64 // the term whose barrier is applied
	sessions  map[int32]*session
	rebalance time.Time // next preferred-leader run
}

// session is what the active controller knows of a broker's liveness.
type session struct {
	epoch int64
	seen  time.Time
	// heard: a heartbeat of this incarnation reached this controller. Only
	// then does the session prove a live process, for the duplicate check
	// of a registration: the grace a new controller gives every broker
	// proves nothing.
	heard bool
	// shutdownOffset is the offset of the batch that started the broker's
	// controlled shutdown: once its metadata reaches it, it may exit.
	shutdownOffset uint64
}

// NewController returns a controller; Run drives its timers.
func NewController(cfg ControllerConfig) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.SessionTimeout = orDefault(cfg.SessionTimeout, DefaultSessionTimeout)
	cfg.FailoverGrace = orDefault(cfg.FailoverGrace, DefaultFailoverGrace)
	cfg.TickInterval = orDefault(cfg.TickInterval, DefaultTickInterval)
	cfg.RebalanceInterval = orDefault(cfg.RebalanceInterval, DefaultRebalanceInterval)
	cfg.Settings = cfg.Settings.WithDefaults()
	for cfg.Seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		cfg.Seed = binary.LittleEndian.Uint64(b[:])
	}
	return &Controller{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "controller"),
		rnd:      rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.NodeID))),
		sessions: map[int32]*session{},
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Settings are the settings the controller decides with.
func (c *Controller) Settings() Settings { return c.cfg.Settings }

// Run checks sessions and leaderships every TickInterval until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := c.cfg.Clock.NewTimer(c.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if c.cfg.Log.Active() {
			if err := c.Tick(ctx); err != nil && !errors.Is(err, ErrNotController) && ctx.Err() == nil {
				c.log.Warn("controller tick", "err", err)
			}
		}
		t.Reset(c.cfg.TickInterval)
	}
}

// Tick fences brokers whose session expired and moves leaderships back to
// preferred replicas when it is time.
func (c *Controller) Tick(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		return err
	}
	now := c.cfg.Clock.Now()
	for _, b := range c.cfg.Store.Image().Brokers() {
		s := c.sessionOf(b.ID, b.Epoch)
		if b.Fenced || now.Sub(s.seen) <= c.cfg.SessionTimeout {
			continue
		}
		c.log.Info("broker session expired; fencing it", "broker", b.ID, "epoch", b.Epoch, "silent", now.Sub(s.seen))
		if _, err := c.commit(ctx, c.cfg.Settings.Fence(c.cfg.Store.Image(), b.ID)); err != nil {
			return err
		}
	}
	if now.Before(c.rebalance) {
		return nil
	}
	c.rebalance = now.Add(c.cfg.RebalanceInterval)
	_, err := c.commit(ctx, c.cfg.Settings.Rebalance(c.cfg.Store.Image()))
	return err
}

// sessionOf is broker id's session at epoch, started now if there is none
// for that epoch.
func (c *Controller) sessionOf(id int32, epoch int64) *session {
	s, ok := c.sessions[id]
	if !ok || s.epoch != epoch {
		s = &session{epoch: epoch, seen: c.cfg.Clock.Now()}
		c.sessions[id] = s
	}
	return s
}

// ready makes sure this node may decide: it is the active controller, and
// its own barrier of this term is applied, so the image holds every entry
// an earlier controller committed. The first controller of a cluster also
// writes the bootstrap record. The caller holds mu.
func (c *Controller) ready(ctx context.Context) error {
	if !c.cfg.Log.Active() {
		return ErrNotController
	}
	_, term := c.cfg.Log.Leader()
	if term == c.readyTerm {
		return nil
	}
	recs := []Record{{Barrier: &Barrier{}}}
	if c.cfg.Store.Image().ClusterID() == "" {
		recs = append(recs, Record{Bootstrap: &Bootstrap{ClusterID: c.cfg.ClusterID}})
	}
	if _, err := c.commit(ctx, recs); err != nil {
		return err
	}
	if id := c.cfg.Store.Image().ClusterID(); id != c.cfg.ClusterID {
		return fmt.Errorf("cluster: the metadata log is of cluster %q, this controller of %q: %w", id, c.cfg.ClusterID, kerr.InconsistentClusterID)
	}
	// Sessions start over: heartbeats went to the previous controller. A
	// broker gets FailoverGrace, not a whole session, to show it is alive.
	c.sessions = map[int32]*session{}
	start := c.cfg.Clock.Now().Add(c.cfg.FailoverGrace - c.cfg.SessionTimeout)
	for _, b := range c.cfg.Store.Image().Brokers() {
		c.sessions[b.ID] = &session{epoch: b.Epoch, seen: start}
	}
	c.readyTerm = term
	c.log.Info("active controller", "node", c.cfg.NodeID, "term", term, "offset", c.cfg.Store.Image().Offset())
	return nil
}

// commit proposes recs as one batch and waits until it is applied. It
// returns the batch's offset, or the reason it was refused. No records:
// nothing to do.
func (c *Controller) commit(ctx context.Context, recs []Record) (uint64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	payload, err := EncodeBatch(recs)
	if err != nil {
		return 0, err
	}
	index, err := c.cfg.Log.Propose(ctx, payload)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", err, kerr.NotController)
	}
	if err := c.cfg.Store.Refusal(index); err != nil {
		c.log.Warn("a decision was refused by the metadata", "err", err)
		return index, fmt.Errorf("%w: %w", err, kerr.RequestTimedOut)
	}
	return index, nil
}

// Handle serves one controller API request: BrokerRegistration,
// BrokerHeartbeat, AlterPartition, AllocateProducerIDs, CreateTopics,
// DeleteTopics, CreatePartitions. A Kafka-level problem is an error code
// in the response; an error is returned only for a request type it does
// not serve.
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return c.register(ctx, r), nil
	case *kmsg.BrokerHeartbeatRequest:
		return c.heartbeat(ctx, r), nil
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(ctx, r), nil
	case *kmsg.AllocateProducerIDsRequest:
		return c.allocateProducerIDs(ctx, r), nil
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(ctx, r), nil
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(ctx, r), nil
	}
	return nil, fmt.Errorf("cluster: the controller does not serve %s", kmsg.NameForKey(req.Key()))
}

// code is the Kafka error code of err (0 for nil; UNKNOWN_SERVER_ERROR for
// an error that names none).
func code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
