package txn

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
)

// Core is the transaction coordinator of one __transaction_state
// partition as event-driven code, after etcd raft's RawNode: requests,
// the outcome of the log appends and marker writes it asked for, and
// ticks with the time in; an Output of obligations out (appends to make,
// answers to give, marker jobs to send, when to tick next). It does no I/O,
// reads no clock and starts no goroutine, so that the broker's goroutines
// (Coordinator) and the simulator's queue drive the same decisions. One
// driver at a time: it is not safe for concurrent use.
//
// What it keeps of each transactional id is the meta committed in the
// log. A change (machine.go's Step) is an Append; the id's requests that
// arrive while it is in flight wait in the id's queue, in order, as they
// waited for the id's lock before; once the driver reports the append
// committed (Appended with a nil error) the change is the id's meta and
// the request is answered. A decided transaction's markers go out as a
// MarkerJob; once they are written (MarkersWritten) its Complete state is
// appended, and is the id's meta at once: the requests that waited go on
// without waiting for it to commit (see complete). A failed marker job is
// tried again markerBackoff later, at a Tick.
type Core struct {
	cfg     CoreConfig
	txns    map[string]*entry
	writes  map[uint64]*write // appends in flight, by token
	jobs    map[uint64]string // marker jobs out: their id
	tok     uint64            // last token given to an append or a job
	scanAt  time.Time         // next look for expired transactions and ids
	started bool
	out     Output
}

// CoreConfig configures a Core; zero fields take Config's defaults.
type CoreConfig struct {
	Logger *slog.Logger
	// CoordinatorEpoch goes into every marker job (see Config).
	CoordinatorEpoch int32
	MaxTimeout       time.Duration
	AbortInterval    time.Duration
	IDExpiration     time.Duration // negative: never
}

// Kind is what a Request asks.
type Kind int

// The requests a coordinator answers.
const (
	// KindInit is InitProducerId (Request.Init, Request.NewProducerID).
	KindInit Kind = iota + 1
	// KindAdd is AddPartitionsToTxn, or AddOffsetsToTxn with the group's
	// partition (Request.Producer, Request.Partitions).
	KindAdd
	// KindVerify is a partition leader's question (KIP-890): is each of
	// Request.Partitions in Request.Producer's ongoing transaction?
	KindVerify
	// KindEnd is EndTxn (Request.Producer, Request.Commit, Request.TV2).
	KindEnd
)

// Request is one request to the coordinator.
type Request struct {
	// Token is the driver's, echoed in the Answer.
	Token      uint64
	Kind       Kind
	ID         string // the transactional id
	Init       InitRequest
	Producer   Producer
	Partitions []TopicPartition
	Commit     bool
	TV2        bool
	// NewProducerID is a producer id allocated for this InitProducerId (-1
	// or 0: none). An Init that needs one and has none is answered with
	// Answer.NeedProducerID: the driver allocates one (which may take a
	// round trip to the controller) and sends the request again with it.
	NewProducerID int64
	// Wait (KindAdd): while the id's last transaction is being decided,
	// hold the request until its Complete state is the id's meta, and
	// then carry it out, rather than answer CONCURRENT_TRANSACTIONS at
	// once; after WaitMax it is answered CONCURRENT_TRANSACTIONS all the
	// same. A partition leader's add under KIP-890's second part: the
	// producer's next transaction begins as soon as the last is decided,
	// so its first write usually arrives while the markers are under way,
	// and the request goes on the moment they are in instead of when the
	// leader's next try comes.
	Wait bool
}

// WaitMax bounds how long a Request with Wait is held. Short: the markers
// take a replication round or two, and a remote leader's held request
// holds the answers behind it on its connection.
const WaitMax = 500 * time.Millisecond

// Answer is what to answer the request of Token.
type Answer struct {
	Token      uint64
	ProducerID int64 // KindInit and KindEnd
	Epoch      int16 // KindInit and KindEnd
	Code       int16
	Codes      []int16 // KindVerify: one per partition
	// NeedProducerID: send the request again with Request.NewProducerID.
	NeedProducerID bool
}

// Append is a record to append to __transaction_state; the driver reports
// with Appended(Token, err) once it is committed or has failed.
type Append struct {
	Token  uint64
	Record batch.KV
	// Internal: no request waits on it (an expired transaction's abort, an
	// id's expiry, a Complete state).
	Internal bool
}

// Job is a marker job to send; the driver reports with
// MarkersWritten(Token, err).
type Job struct {
	Token uint64
	MarkerJob
}

// Output is what the Core asks of its driver after an event, in order:
// make the appends (in this order), send the jobs, give the answers, and
// Tick at Deadline.
type Output struct {
	Appends []Append
	Jobs    []Job
	Answers []Answer
	// Deadline is when to Tick next (zero before Start).
	Deadline time.Time
}

// Empty reports whether o asks nothing but the next tick.
func (o Output) Empty() bool {
	return len(o.Appends) == 0 && len(o.Jobs) == 0 && len(o.Answers) == 0
}

// entry is one transactional id.
type entry struct {
	meta *Meta
	// w is the id's write in flight, nil for none; queue the requests
	// that came meanwhile, in order.
	w     *write
	queue []Request
	// job is the token of the marker job out for meta's transaction (0:
	// none); retryAt, when set, is when to try the markers again.
	job     uint64
	retryAt time.Time
	// marked: meta's markers are written, its Complete state is not yet.
	marked bool
	// held are the requests with Wait that came while meta was being
	// decided, in order, each with when to give up on it.
	held []heldRequest
}

// heldRequest is a Request with Wait held until its id's transaction is
// complete, or until.
type heldRequest struct {
	req   Request
	until time.Time
}

// write is an append in flight and what to do when it is committed.
type write struct {
	id      string
	next    *Meta // nil: a tombstone
	markers bool  // then write next's markers
	done    bool  // next is a Complete state
	req     *Request
	code    int16 // the answer's code once committed
}

// NewCore is the coordinator of the ids in metas (what replay found);
// Start begins it.
func NewCore(cfg CoreConfig, metas map[string]*Meta) *Core {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = DefaultAbortInterval
	}
	if cfg.IDExpiration == 0 {
		cfg.IDExpiration = DefaultIDExpiration
	}
	c := &Core{cfg: cfg, txns: map[string]*entry{}, writes: map[uint64]*write{}, jobs: map[uint64]string{}}
	for id, m := range metas {
		c.txns[id] = &entry{meta: m}
	}
	return c
}

// Start sends the markers of the transactions found decided but not
// complete, and arms the first tick.
func (c *Core) Start(now time.Time) Output {
	c.started = true
	c.scanAt = now.Add(c.cfg.AbortInterval)
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		if e := c.txns[id]; pending(e.meta) {
			c.sendMarkers(id, e)
		}
	}
	return c.flush()
}

// Handle takes a request. Its answer comes in this Output, or in a later
// one once the change it makes is committed.
func (c *Core) Handle(req Request, now time.Time) Output {
	e := c.txns[req.ID]
	if e == nil {
		if req.Kind != KindInit {
			c.answerUnknown(req)
			return c.flush()
		}
		e = &entry{}
		c.txns[req.ID] = e
	}
	if e.w != nil {
		e.queue = append(e.queue, req)
		return c.flush()
	}
	c.run(req.ID, e, req, now)
	c.settle(req.ID, e, now)
	return c.flush()
}

// answerUnknown answers a request for an id the coordinator does not know.
func (c *Core) answerUnknown(req Request) {
	a := Answer{Token: req.Token, ProducerID: -1, Epoch: -1, Code: kerr.InvalidProducerIDMapping.Code}
	if req.Kind == KindVerify {
		a.Code = 0
		a.Codes = make([]int16, len(req.Partitions))
		for i := range a.Codes {
			a.Codes[i] = kerr.InvalidProducerIDMapping.Code
		}
	}
	c.out.Answers = append(c.out.Answers, a)
}

// errNeedID stops an InitProducerId that needs a producer id it was not
// given.
var errNeedID = errors.New("a producer id is needed")

// run carries out req on e, which has no write in flight.
func (c *Core) run(id string, e *entry, req Request, now time.Time) {
	var st Step
	switch req.Kind {
	case KindInit:
		var err error
		st, err = initProducer(e.meta, id, req.Init, now, c.cfg.MaxTimeout, func() (int64, error) {
			if req.NewProducerID <= 0 {
				return 0, errNeedID
			}
			return req.NewProducerID, nil
		})
		if err != nil {
			c.out.Answers = append(c.out.Answers, Answer{Token: req.Token, ProducerID: -1, Epoch: -1, NeedProducerID: true})
			return
		}
	case KindAdd:
		st = addPartitions(e.meta, req.Producer, req.Partitions, now)
		if req.Wait && st.Code == kerr.ConcurrentTransactions.Code {
			e.held = append(e.held, heldRequest{req: req, until: now.Add(WaitMax)})
			return
		}
	case KindEnd:
		st = endTxn(e.meta, req.Producer, req.Commit, req.TV2, now)
	case KindVerify:
		codes := make([]int16, len(req.Partitions))
		for i, tp := range req.Partitions {
			codes[i] = verify(e.meta, req.Producer, tp)
		}
		c.out.Answers = append(c.out.Answers, Answer{Token: req.Token, Codes: codes})
		return
	default:
		panic("txn: a request of no known kind")
	}
	if st.Next == nil {
		c.answer(e, req, st.Code)
		return
	}
	c.append(id, e, &write{id: id, next: st.Next, markers: st.Markers, req: &req, code: st.Code}, now)
}

// answer answers req with code and e's meta as it is now.
func (c *Core) answer(e *entry, req Request, code int16) {
	a := Answer{Token: req.Token, ProducerID: -1, Epoch: -1, Code: code}
	switch req.Kind {
	case KindInit:
		if code != 0 || e.meta == nil {
			if code == 0 {
				code = kerr.CoordinatorNotAvailable.Code
			}
			a.Code = code
			break
		}
		a.ProducerID, a.Epoch = e.meta.ProducerID, e.meta.Epoch
	case KindEnd:
		if e.meta != nil {
			a.ProducerID, a.Epoch = e.meta.ProducerID, e.meta.Epoch
		}
	}
	c.out.Answers = append(c.out.Answers, a)
}

// append asks for w's record and makes it e's write in flight.
func (c *Core) append(id string, e *entry, w *write, _ time.Time) {
	c.tok++
	e.w = w
	c.writes[c.tok] = w
	rec := batch.KV{Key: recordKey(id)}
	if w.next != nil {
		rec.Value = w.next.recordValue()
	}
	c.out.Appends = append(c.out.Appends, Append{Token: c.tok, Record: rec, Internal: w.req == nil})
}

// Appended reports the outcome of the append of token: nil once it is
// committed; an error (for the code to answer, coordlog.ErrorCode) if it
// failed or will not be known to be committed.
func (c *Core) Appended(token uint64, err error, now time.Time) Output {
	w := c.writes[token]
	if w == nil {
		return c.flush()
	}
	delete(c.writes, token)
	e := c.txns[w.id]
	if w.done {
		// A Complete state: e's meta since it was appended (complete).
		if err != nil {
			c.cfg.Logger.Warn("txn: storing a completed transaction failed; the next write of the id, or the next coordinator, settles it",
				"transactional_id", w.id, "err", err)
		}
		return c.flush()
	}
	e.w = nil
	if err != nil {
		c.cfg.Logger.Warn("txn: store failed", "transactional_id", w.id, "err", err)
		if w.req != nil {
			c.answer(e, *w.req, coordlog.ErrorCode(err))
		}
		c.settle(w.id, e, now)
		return c.flush()
	}
	e.meta = w.next
	switch {
	case w.next == nil:
		c.cfg.Logger.Info("txn: transactional id expired", "transactional_id", w.id)
	case w.markers:
		c.sendMarkers(w.id, e)
	}
	if w.req != nil {
		c.answer(e, *w.req, w.code)
	}
	c.settle(w.id, e, now)
	return c.flush()
}

// settle moves e on while it has no write in flight: a Complete state to
// write first, then the requests held for it, then those that waited. An
// id left with nothing is forgotten.
func (c *Core) settle(id string, e *entry, now time.Time) {
	for e.w == nil {
		if e.marked && e.retryAt.IsZero() {
			c.complete(id, e, now)
			continue
		}
		if len(e.held) > 0 && (e.meta == nil || !pending(e.meta)) {
			// Held before the requests queued behind a write: they came
			// first. The Complete state just appended and a held add's
			// Ongoing state go out together, in one Output.
			reqs := make([]Request, 0, len(e.held)+len(e.queue))
			for _, h := range e.held {
				reqs = append(reqs, h.req)
			}
			e.held = nil
			e.queue = append(reqs, e.queue...)
		}
		if len(e.queue) == 0 {
			break
		}
		req := e.queue[0]
		e.queue = e.queue[1:]
		c.run(id, e, req, now)
	}
	if e.meta == nil && e.w == nil && len(e.queue) == 0 && len(e.held) == 0 && c.txns[id] == e {
		delete(c.txns, id)
	}
}

// releaseHeld answers CONCURRENT_TRANSACTIONS to e's held requests that
// are due at now, every one with all.
func (c *Core) releaseHeld(e *entry, now time.Time, all bool) {
	kept := e.held[:0]
	for _, h := range e.held {
		if all || !now.Before(h.until) {
			c.answer(e, h.req, kerr.ConcurrentTransactions.Code)
			continue
		}
		kept = append(kept, h)
	}
	clear(e.held[len(kept):])
	e.held = kept
}

// ReleaseHeld answers every held request (see Request.Wait)
// CONCURRENT_TRANSACTIONS now: the driver is closing.
func (c *Core) ReleaseHeld(now time.Time) Output {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		c.releaseHeld(c.txns[id], now, true)
	}
	return c.flush()
}

// complete writes the Complete state of e's decided transaction, whose
// markers are written, and makes it e's meta without waiting for the
// append to commit. Nothing decided on that meta needs it durable: the
// decision (the Prepare state) is, and the markers are in. Every write
// after it lies after it in the log, so committing one commits the
// Complete state too; and if the coordinator fails over before either is
// committed, its successor finds the Prepare state and writes the markers
// again, which is safe because no later transaction of the id can have
// written anything yet (its first write in a partition waits for an
// Ongoing state committed after this one). A producer's next transaction
// begins one replication round sooner.
func (c *Core) complete(id string, e *entry, now time.Time) {
	e.marked = false
	if !pending(e.meta) {
		return // cannot happen: nothing moves a pending meta but this
	}
	next := completed(e.meta, now)
	c.tok++
	c.writes[c.tok] = &write{id: id, next: next, done: true}
	c.out.Appends = append(c.out.Appends, Append{Token: c.tok, Record: batch.KV{Key: recordKey(id), Value: next.recordValue()}, Internal: true})
	e.meta = next
}

// sendMarkers sends the job of e's decided transaction.
func (c *Core) sendMarkers(id string, e *entry) {
	m := e.meta
	c.tok++
	e.job, e.retryAt, e.marked = c.tok, time.Time{}, false
	c.jobs[c.tok] = id
	c.out.Jobs = append(c.out.Jobs, Job{Token: c.tok, MarkerJob: MarkerJob{
		TxnID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, Commit: m.State == PrepareCommit,
		CoordinatorEpoch: c.cfg.CoordinatorEpoch, Partitions: m.SortedPartitions(),
	}})
}

// MarkersWritten reports the outcome of marker job token: nil once every
// partition has its marker committed; an error and the job is sent again
// after a pause.
func (c *Core) MarkersWritten(token uint64, err error, now time.Time) Output {
	id, ok := c.jobs[token]
	if !ok {
		return c.flush()
	}
	delete(c.jobs, token)
	e := c.txns[id]
	if e == nil || e.job != token {
		return c.flush()
	}
	e.job = 0
	if err != nil {
		c.cfg.Logger.Info("txn: markers not all written; retrying", "transactional_id", id, "err", err)
		c.retry(e, now)
		return c.flush()
	}
	e.marked = true
	c.settle(id, e, now)
	return c.flush()
}

// retry tries e's markers, or its Complete state, again after a pause.
func (c *Core) retry(e *entry, now time.Time) {
	e.retryAt = now.Add(markerBackoff)
}

// Tick is the clock: the retries that are due, and every AbortInterval
// the abort of expired transactions and the expiry of unused ids.
func (c *Core) Tick(now time.Time) Output {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		e := c.txns[id]
		if len(e.held) > 0 {
			c.releaseHeld(e, now, false)
		}
		if e.retryAt.IsZero() || now.Before(e.retryAt) {
			continue
		}
		e.retryAt = time.Time{}
		if e.marked {
			c.settle(id, e, now)
		} else if pending(e.meta) {
			c.sendMarkers(id, e)
		}
	}
	if !now.Before(c.scanAt) {
		c.scanAt = now.Add(c.cfg.AbortInterval)
		c.abortExpired(now)
		c.expireIDs(now)
	}
	return c.flush()
}

// AbortExpired aborts every transaction past its timeout at now that has
// no write in flight, fencing its producer (the abort bumps the epoch).
// Tick does it every AbortInterval.
func (c *Core) AbortExpired(now time.Time) Output {
	c.abortExpired(now)
	return c.flush()
}

func (c *Core) abortExpired(now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		e := c.txns[id]
		if e.w != nil || e.meta == nil || !expired(e.meta, now) {
			continue
		}
		c.cfg.Logger.Info("txn: aborting a transaction past its timeout", "transactional_id", id,
			"producer_id", e.meta.ProducerID, "epoch", e.meta.Epoch, "timeout", e.meta.Timeout)
		st := abortExpired(e.meta, now)
		c.append(id, e, &write{id: id, next: st.Next, markers: st.Markers}, now)
	}
}

// ExpireIDs forgets every transactional id with no transaction open or
// being decided, and no write in flight, that has not changed for
// IDExpiration: its record gets a tombstone, and a producer that comes
// back with it starts afresh (a new producer id). Tick does it every
// AbortInterval.
func (c *Core) ExpireIDs(now time.Time) Output {
	c.expireIDs(now)
	return c.flush()
}

func (c *Core) expireIDs(now time.Time) {
	if c.cfg.IDExpiration < 0 {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		e := c.txns[id]
		if m := e.meta; e.w == nil && m != nil && !pending(m) && m.State != Ongoing && now.Sub(m.Update) > c.cfg.IDExpiration {
			c.append(id, e, &write{id: id}, now)
		}
	}
}

// Meta returns a copy of id's committed meta.
func (c *Core) Meta(id string) (*Meta, bool) {
	e := c.txns[id]
	if e == nil || e.meta == nil {
		return nil, false
	}
	return e.meta.clone(), true
}

// Metas returns a copy of every id's committed meta, by id.
func (c *Core) Metas() []*Meta {
	var out []*Meta
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		if m, ok := c.Meta(id); ok {
			out = append(out, m)
		}
	}
	return out
}

// flush hands out what the events so far asked for, with the next tick.
func (c *Core) flush() Output {
	out := c.out
	c.out = Output{}
	if !c.started {
		return out
	}
	out.Deadline = c.scanAt
	for _, e := range c.txns {
		if !e.retryAt.IsZero() && e.retryAt.Before(out.Deadline) {
			out.Deadline = e.retryAt
		}
		for _, h := range e.held {
			if h.until.Before(out.Deadline) {
				out.Deadline = h.until
			}
		}
	}
	return out
}
