package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerCore is the active controller's logic without any waiting: the
// brokers' sessions, the barrier a new term commits before deciding, and
// the controller APIs, as operations (Op) that say which records to commit
// and continue once the batch is applied. It does no I/O, reads no clock
// (every call takes now) and draws randomness only from its seeded source,
// so the blocking Controller of the broker and the simulator, which drives
// it from one goroutine, run the same code. Decisions themselves are the
// Settings methods of decide.go and alter.go.
//
// Operations must run one at a time: start one, commit what it asks, feed
// the outcome back with Applied, until Done; then start the next. Each is
// so decided on the image every operation before it produced.
type ControllerCore struct {
	cfg CoreConfig
	log *slog.Logger
	rnd *rand.Rand

	readyTerm uint64 // the term whose barrier is applied
	sessions  map[int32]*session
	rebalance time.Time // next preferred-leader run
	// autoRebalance: the periodic run moves leaderships back to preferred
	// replicas (Kafka's auto.leader.rebalance.enable); without it, it only
	// elects leaders of offline partitions.
	autoRebalance bool
}

// CoreConfig configures a ControllerCore. Durations have the defaults of
// ControllerConfig when zero; Seed is required (the shell draws one).
type CoreConfig struct {
	NodeID         int32
	ClusterID      string
	Settings       Settings
	Seed           uint64
	SessionTimeout time.Duration
	FailoverGrace  time.Duration
	// RebalanceInterval is how often leaderships move back to preferred
	// replicas (Kafka's leader.imbalance.check.interval.seconds); negative
	// turns that off (auto.leader.rebalance.enable=false): offline
	// partitions are still elected at DefaultRebalanceInterval, and
	// ElectLeaders moves leaderships on request.
	RebalanceInterval time.Duration
	Logger            *slog.Logger
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

// NewControllerCore returns a core with no sessions, not ready in any term.
func NewControllerCore(cfg CoreConfig) *ControllerCore {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.SessionTimeout = orDefault(cfg.SessionTimeout, DefaultSessionTimeout)
	cfg.FailoverGrace = orDefault(cfg.FailoverGrace, DefaultFailoverGrace)
	auto := cfg.RebalanceInterval >= 0
	cfg.RebalanceInterval = orDefault(cfg.RebalanceInterval, DefaultRebalanceInterval)
	cfg.Settings = cfg.Settings.WithDefaults()
	return &ControllerCore{
		cfg:           cfg,
		autoRebalance: auto,
		log:           cfg.Logger.With("component", "controller"),
		rnd:           rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.NodeID))),
		sessions:      map[int32]*session{},
	}
}

// Settings are the settings the core decides with.
func (c *ControllerCore) Settings() Settings { return c.cfg.Settings }

// Quorum is what an operation needs to know of the replicated log when it
// starts: whether this node may decide (it leads the quorum and its lease
// holds) and the leader's term.
type Quorum struct {
	Active bool
	Term   uint64
	// Gone: voters (node ids) whose connections to this node closed and
	// that have neither connected again nor sent anything since. A new
	// controller fences them without
	// the grace it gives the others: the previous controller, killed, is
	// one, and it heartbeat to itself, so no connection of its closes here.
	Gone []int32
}

// Outcome is what became of the batch an Op asked to commit.
type Outcome struct {
	// Image is the latest image: the batch applied, or refused.
	Image *Metadata
	// Offset is the batch's log offset (0 if it never got one).
	Offset uint64
	// Lost: the batch was not committed by this controller (not the leader
	// any more, the proposal dropped, the context ended). It may still
	// commit; the operation answers NOT_CONTROLLER.
	Lost error
	// Refused: Metadata.Apply refused the batch (Store.Refusal); the
	// operation answers REQUEST_TIMED_OUT and the client retries.
	Refused error
	Now     time.Time
}

// Op is one operation of the core under way: a controller request, a tick,
// a lost connection. While Proposal returns records, commit them as one
// batch and call Applied with the outcome; once Done, Response is the answer
// (nil for Tick and ConnectionLost) and Err any failure to report.
type Op struct {
	c    *ControllerCore
	img  *Metadata
	now  time.Time
	recs []Record
	then func(offset uint64, err error)
	done bool
	resp kmsg.Response
	err  error
}

// Proposal is the batch to commit next, nil once the operation is done.
func (o *Op) Proposal() []Record { return o.recs }

// Done reports whether the operation has finished.
func (o *Op) Done() bool { return o.done }

// Response is the answer of a finished request.
func (o *Op) Response() kmsg.Response { return o.resp }

// Err is what a finished Tick failed with (logged by the shell).
func (o *Op) Err() error { return o.err }

// Applied continues the operation with what became of its Proposal.
func (o *Op) Applied(out Outcome) {
	if o.then == nil {
		panic("cluster: Op.Applied without a proposal")
	}
	then := o.then
	o.recs, o.then = nil, nil
	if out.Image != nil {
		o.img = out.Image
	}
	if !out.Now.IsZero() {
		o.now = out.Now
	}
	var err error
	switch {
	case out.Lost != nil:
		err = fmt.Errorf("%w: %w", out.Lost, kerr.NotController)
	case out.Refused != nil:
		o.c.log.Warn("a decision was refused by the metadata", "err", out.Refused)
		err = fmt.Errorf("%w: %w", out.Refused, kerr.RequestTimedOut)
	}
	then(out.Offset, err)
}

// commit asks for recs to be committed, then runs then with the batch's
// offset or why it was not applied. No records: then runs at once.
func (o *Op) commit(recs []Record, then func(offset uint64, err error)) {
	if len(recs) == 0 {
		then(0, nil)
		return
	}
	o.recs, o.then = recs, then
}

func (o *Op) finish(resp kmsg.Response, err error) {
	o.resp, o.err, o.done = resp, err, true
}

func (c *ControllerCore) start(img *Metadata, now time.Time) *Op {
	return &Op{c: c, img: img, now: now}
}

// ready runs then once this node may decide: it is the active controller,
// and its own barrier of this term is applied, so the image holds every
// entry an earlier controller committed. The first controller of a cluster
// also writes the bootstrap record.
func (c *ControllerCore) ready(o *Op, q Quorum, then func(err error)) {
	if !q.Active {
		then(ErrNotController)
		return
	}
	if q.Term == c.readyTerm {
		then(nil)
		return
	}
	recs := []Record{{Barrier: &Barrier{}}}
	if o.img.ClusterID() == "" {
		recs = append(recs, Record{Bootstrap: &Bootstrap{ClusterID: c.cfg.ClusterID}})
	}
	o.commit(recs, func(_ uint64, err error) {
		if err != nil {
			then(err)
			return
		}
		if id := o.img.ClusterID(); id != c.cfg.ClusterID {
			then(fmt.Errorf("cluster: the metadata log is of cluster %q, this controller of %q: %w", id, c.cfg.ClusterID, kerr.InconsistentClusterID))
			return
		}
		// Sessions start over: heartbeats went to the previous controller. A
		// broker gets FailoverGrace, not a whole session, to show it is alive.
		c.sessions = map[int32]*session{}
		start := o.now.Add(c.cfg.FailoverGrace - c.cfg.SessionTimeout)
		for _, b := range o.img.Brokers() {
			seen := start
			if slices.Contains(q.Gone, b.ID) && !b.Fenced {
				c.log.Info("a voter's connection closed before this controller took over; its session starts expired", "broker", b.ID, "epoch", b.Epoch)
				seen = o.now.Add(-c.cfg.SessionTimeout - time.Nanosecond)
			}
			c.sessions[b.ID] = &session{epoch: b.Epoch, seen: seen}
		}
		c.readyTerm = q.Term
		c.log.Info("active controller", "node", c.cfg.NodeID, "term", q.Term, "offset", o.img.Offset())
		then(nil)
	})
}

// Tick fences brokers whose session expired, one decision each on the
// image the previous left, completes the partition reassignments that can
// complete, and moves leaderships back to preferred replicas when it is
// time.
func (c *ControllerCore) Tick(q Quorum, img *Metadata, now time.Time) *Op {
	o := c.start(img, now)
	c.ready(o, q, func(err error) {
		if err != nil {
			o.finish(nil, err)
			return
		}
		c.fenceExpired(o, o.img.Brokers(), func(err error) {
			if err != nil {
				o.finish(nil, err)
				return
			}
			o.commit(c.cfg.Settings.CompleteReassignments(o.img), func(_ uint64, err error) {
				if err != nil || o.now.Before(c.rebalance) {
					o.finish(nil, err)
					return
				}
				c.rebalance = o.now.Add(c.cfg.RebalanceInterval)
				recs := c.cfg.Settings.ElectOffline(o.img)
				if c.autoRebalance {
					recs = c.cfg.Settings.Rebalance(o.img)
				}
				o.commit(recs, func(_ uint64, err error) { o.finish(nil, err) })
			})
		})
	})
	return o
}

// fenceExpired fences, one at a time, the brokers of bs whose session
// expired.
func (c *ControllerCore) fenceExpired(o *Op, bs []*Broker, then func(error)) {
	for i, b := range bs {
		s := c.sessionOf(b.ID, b.Epoch, o.now)
		if b.Fenced || o.now.Sub(s.seen) <= c.cfg.SessionTimeout {
			continue
		}
		c.log.Info("broker session expired; fencing it", "broker", b.ID, "epoch", b.Epoch, "silent", o.now.Sub(s.seen))
		rest := bs[i+1:]
		o.commit(c.cfg.Settings.Fence(o.img, b.ID), func(_ uint64, err error) {
			if err != nil {
				then(err)
				return
			}
			c.fenceExpired(o, rest, then)
		})
		return
	}
	then(nil)
}

// sessionOf is broker id's session at epoch, started now if there is none
// for that epoch.
func (c *ControllerCore) sessionOf(id int32, epoch int64, now time.Time) *session {
	s, ok := c.sessions[id]
	if !ok || s.epoch != epoch {
		s = &session{epoch: epoch, seen: now}
		c.sessions[id] = s
	}
	return s
}

// ConnectionLost fences broker id at epoch when its heartbeat connection
// to this controller closed: a process that was killed says so sooner than
// its session timeout. Fencing a live broker by mistake costs a leadership
// move, never data: it is unfenced at its next heartbeat once caught up.
func (c *ControllerCore) ConnectionLost(q Quorum, img *Metadata, now time.Time, id int32, epoch int64) *Op {
	o := c.start(img, now)
	c.ready(o, q, func(err error) {
		if err != nil {
			o.finish(nil, nil)
			return
		}
		b, ok := o.img.Broker(id)
		if !ok || b.Epoch != epoch || b.Fenced {
			o.finish(nil, nil)
			return
		}
		c.log.Info("broker's heartbeat connection closed; fencing it", "broker", id, "epoch", epoch)
		o.commit(c.cfg.Settings.Fence(o.img, id), func(_ uint64, err error) {
			if err != nil {
				c.log.Warn("fencing a broker whose connection closed", "broker", id, "err", err)
			}
			o.finish(nil, nil)
		})
	})
	return o
}

// ErrUnsupportedRequest: Handle was given a request the controller does
// not serve.
var ErrUnsupportedRequest = errors.New("cluster: the controller does not serve this request")

// Handle starts serving one controller API request: BrokerRegistration,
// BrokerHeartbeat, AlterPartition, AllocateProducerIDs, CreateTopics,
// DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
// ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments.
// A Kafka-level problem is an error code in
// the response; an error is returned only for a request type it does not
// serve.
func (c *ControllerCore) Handle(q Quorum, img *Metadata, now time.Time, req kmsg.Request) (*Op, error) {
	o := c.start(img, now)
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		c.register(o, q, r)
	case *kmsg.BrokerHeartbeatRequest:
		c.heartbeat(o, q, r)
	case *kmsg.AlterPartitionRequest:
		c.alterPartition(o, q, r)
	case *kmsg.AllocateProducerIDsRequest:
		c.allocateProducerIDs(o, q, r)
	case *kmsg.CreateTopicsRequest:
		c.createTopics(o, q, r)
	case *kmsg.DeleteTopicsRequest:
		c.deleteTopics(o, q, r)
	case *kmsg.CreatePartitionsRequest:
		c.createPartitions(o, q, r)
	case *kmsg.AlterConfigsRequest:
		c.alterConfigs(o, q, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		c.incrementalAlterConfigs(o, q, r)
	case *kmsg.ElectLeadersRequest:
		c.electLeaders(o, q, r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		c.alterReassignments(o, q, r)
	case *kmsg.ListPartitionReassignmentsRequest:
		c.listReassignments(o, q, r)
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
	}
	return o, nil
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
