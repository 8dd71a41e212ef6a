package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/cluster"
)

// OpQueue runs the active controller's operations (cluster.Op: a
// controller request, a tick, a lost heartbeat connection) one at a time:
// each starts on the image every operation before it produced, proposes
// the batches it asks for one after another, and goes on with what became
// of each (applied, refused by the metadata, lost with the leadership or
// to a timeout) until it is done. The driver submits jobs, proposes what
// Next returns to the quorum, hands back each batch's fate with Outcome,
// and calls Next again; it calls Tick on its clock. One driver goroutine
// at a time.
type OpQueue struct {
	core *cluster.ControllerCore
	cfg  OpQueueConfig
	log  *slog.Logger

	queue    []Job
	cur      *cluster.Op
	done     func(*cluster.Op)
	proposed bool // a batch of cur is out, its outcome awaited

	tickQueued bool
	nextTick   time.Time
}

// OpQueueConfig configures an OpQueue.
type OpQueueConfig struct {
	// TickInterval is how often sessions and leaderships are checked while
	// this node is the active controller.
	TickInterval time.Duration
	Logger       *slog.Logger
}

// Defaults of OpQueueConfig.
const DefaultTickInterval = cluster.DefaultTickInterval

// Job is an operation to run: Start makes it (nil: nothing to do), Done
// gets it once finished (nil when Start made none).
type Job struct {
	Start func(q cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op
	Done  func(*cluster.Op)
}

// NewOpQueue returns an empty queue over core.
func NewOpQueue(core *cluster.ControllerCore, cfg OpQueueConfig) *OpQueue {
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &OpQueue{core: core, cfg: cfg, log: cfg.Logger.With("component", "controller")}
}

// Settings are the settings the controller decides with.
func (q *OpQueue) Settings() cluster.Settings { return q.core.Settings() }

// Submit queues j behind the operations already queued.
func (q *OpQueue) Submit(j Job) { q.queue = append(q.queue, j) }

// HandleJob is the job of serving a controller API request; done gets the
// response, or cluster.ErrUnsupportedRequest for a request the controller
// does not serve.
func (q *OpQueue) HandleJob(req kmsg.Request, done func(kmsg.Response, error)) Job {
	var herr error
	return Job{
		Start: func(qs cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op {
			op, err := q.core.Handle(qs, img, now, req)
			herr = err
			return op
		},
		Done: func(op *cluster.Op) {
			if op == nil {
				done(nil, herr)
				return
			}
			done(op.Response(), nil)
		},
	}
}

// ConnectionLostJob is the job of fencing broker id at epoch, whose
// heartbeat connection to this controller closed.
func (q *OpQueue) ConnectionLostJob(id int32, epoch int64) Job {
	return Job{
		Start: func(qs cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op {
			return q.core.ConnectionLost(qs, img, now, id, epoch)
		},
		Done: func(*cluster.Op) {},
	}
}

// Tick queues the controller's periodic check (sessions, preferred
// leaders) when this node is the active controller and TickInterval has
// passed since the last one was queued, unless one is still queued.
func (q *OpQueue) Tick(now time.Time, active bool) {
	if !active || q.tickQueued || now.Before(q.nextTick) {
		return
	}
	q.tickQueued, q.nextTick = true, now.Add(q.cfg.TickInterval)
	q.Submit(Job{
		Start: func(qs cluster.Quorum, img *cluster.Metadata, now time.Time) *cluster.Op {
			return q.core.Tick(qs, img, now)
		},
		Done: func(op *cluster.Op) {
			q.tickQueued = false
			if err := op.Err(); err != nil && !errors.Is(err, cluster.ErrNotController) {
				q.log.Warn("controller tick", "err", err)
			}
		},
	})
}

// Idle reports whether nothing is queued or under way.
func (q *OpQueue) Idle() bool { return q.cur == nil && len(q.queue) == 0 }

// Next starts what is queued and returns the batch the current operation
// asks to commit, with the quorum's state qs, the latest image and now;
// false when there is none to propose (nothing to do, or a batch is out).
func (q *OpQueue) Next(qs cluster.Quorum, img *cluster.Metadata, now time.Time) ([]byte, bool) {
	for {
		if q.cur == nil {
			if len(q.queue) == 0 {
				return nil, false
			}
			j := q.queue[0]
			q.queue = q.queue[1:]
			op := j.Start(qs, img, now)
			if op == nil {
				j.Done(nil)
				continue
			}
			q.cur, q.done = op, j.Done
		}
		if q.proposed {
			return nil, false
		}
		if q.cur.Done() {
			op, done := q.cur, q.done
			q.cur, q.done = nil, nil
			done(op)
			continue
		}
		payload, err := cluster.EncodeBatch(q.cur.Proposal())
		if err != nil {
			q.cur.Applied(cluster.Outcome{Image: img, Lost: fmt.Errorf("encode a metadata batch: %w", err), Now: now})
			continue
		}
		q.proposed = true
		return payload, true
	}
}

// Proposing reports whether a batch is out. A batch out is never given up
// for taking long: its outcome is that it was applied, or that this node's
// leadership or term changed (Outcome.Lost), and nothing else is decided
// meanwhile. A batch given up while this node still leads the term it was
// proposed in can still commit once a quorum answers again, after batches
// decided on images without it: the simulator found a fence decided that
// way electing a broker that the batch given up had fenced. The clients of
// a batch that takes long time out on their side.
func (q *OpQueue) Proposing() bool { return q.proposed }

// Outcome continues the current operation with what became of the batch
// Next returned; then call Next again.
func (q *OpQueue) Outcome(out cluster.Outcome) {
	if !q.proposed {
		panic("node: OpQueue.Outcome without a batch out")
	}
	q.proposed = false
	q.cur.Applied(out)
}
