package cluster

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
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
	// Gone lists the voters, by node id, whose connections to this node
	// closed and that have neither connected again nor sent anything
	// since: their processes have likely died (see Quorum.Gone).
	Gone() []int32
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
	DefaultSessionTimeout = 3 * time.Second
	// DefaultFailoverGrace covers a few heartbeats (every 250 ms by
	// default): a broker that is alive finds the new controller at once
	// (it is a voter and sees the raft leader change).
	DefaultFailoverGrace     = 750 * time.Millisecond
	DefaultTickInterval      = 100 * time.Millisecond
	DefaultRebalanceInterval = 2 * time.Second
)

// Controller is the blocking shell around a ControllerCore on a controller
// node: it runs one operation at a time, proposes the records each asks for
// to the Log and waits until they are applied to the Store, and drives the
// session checks on the injected clock (Run). The simulator drives the same
// core without it.
type Controller struct {
	cfg  ControllerConfig
	log  *slog.Logger
	core *ControllerCore

	// mu serializes operations: each is decided on the image that every
	// operation before it has produced.
	mu sync.Mutex
}

// NewController returns a controller; Run drives its timers.
func NewController(cfg ControllerConfig) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.TickInterval = orDefault(cfg.TickInterval, DefaultTickInterval)
	for cfg.Seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		cfg.Seed = binary.LittleEndian.Uint64(b[:])
	}
	core := NewControllerCore(CoreConfig{
		NodeID: cfg.NodeID, ClusterID: cfg.ClusterID, Settings: cfg.Settings, Seed: cfg.Seed,
		SessionTimeout: cfg.SessionTimeout, FailoverGrace: cfg.FailoverGrace,
		RebalanceInterval: cfg.RebalanceInterval, Logger: cfg.Logger,
	})
	cfg.Settings = core.Settings()
	return &Controller{cfg: cfg, log: cfg.Logger.With("component", "controller"), core: core}
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
	op := c.run(ctx, func(q Quorum, img *Metadata, now time.Time) *Op { return c.core.Tick(q, img, now) })
	return op.Err()
}

// ConnectionLost fences broker id at epoch when its heartbeat connection
// to this controller closed (see ControllerCore.ConnectionLost).
func (c *Controller) ConnectionLost(ctx context.Context, id int32, epoch int64) {
	c.run(ctx, func(q Quorum, img *Metadata, now time.Time) *Op {
		return c.core.ConnectionLost(q, img, now, id, epoch)
	})
}

// Handle serves one controller API request: BrokerRegistration,
// BrokerHeartbeat, AlterPartition, AllocateProducerIDs, CreateTopics,
// DeleteTopics, CreatePartitions. A Kafka-level problem is an error code
// in the response; an error is returned only for a request type it does
// not serve.
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	var herr error
	op := c.run(ctx, func(q Quorum, img *Metadata, now time.Time) *Op {
		op, err := c.core.Handle(q, img, now, req)
		herr = err
		return op
	})
	if herr != nil {
		return nil, herr
	}
	return op.Response(), nil
}

// run starts an operation and commits what it asks, one batch at a time,
// until it is done.
func (c *Controller) run(ctx context.Context, start func(Quorum, *Metadata, time.Time) *Op) *Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := Quorum{Active: c.cfg.Log.Active(), Gone: c.cfg.Log.Gone()}
	_, q.Term = c.cfg.Log.Leader()
	op := start(q, c.cfg.Store.Image(), c.cfg.Clock.Now())
	for op != nil && !op.Done() {
		recs := op.Proposal()
		if recs == nil {
			panic("cluster: an operation neither done nor proposing")
		}
		op.Applied(c.commit(ctx, recs))
	}
	return op
}

// commit proposes recs as one batch and waits until it is applied.
func (c *Controller) commit(ctx context.Context, recs []Record) Outcome {
	out := Outcome{}
	payload, err := EncodeBatch(recs)
	if err != nil {
		out.Lost = err
	} else if out.Offset, err = c.cfg.Log.Propose(ctx, payload); err != nil {
		out.Lost = err
	} else {
		out.Refused = c.cfg.Store.Refusal(out.Offset)
	}
	out.Image, out.Now = c.cfg.Store.Image(), c.cfg.Clock.Now()
	return out
}
