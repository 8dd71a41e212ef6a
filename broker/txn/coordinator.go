package txn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
	"github.com/minikafka/minikafka/clock"
)

// Defaults for the zero fields of Config.
const (
	// DefaultMaxTimeout is Kafka's transaction.max.timeout.ms: a producer
	// asking for a longer transaction timeout gets INVALID_TRANSACTION_TIMEOUT.
	DefaultMaxTimeout = 15 * time.Minute
	// DefaultIDExpiration is Kafka's transactional.id.expiration.ms: an id
	// whose producer has not begun a transaction for this long is
	// forgotten (a tombstone in __transaction_state), so that ids used
	// once do not accumulate forever.
	DefaultIDExpiration = 7 * 24 * time.Hour
	// DefaultAbortInterval is how often timed-out transactions are looked
	// for (Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms
	// is 10 s; a second bounds how long an abandoned transaction holds back
	// its partitions' last stable offset past its timeout).
	DefaultAbortInterval = time.Second
	// markerBackoff is the pause between two attempts at a transaction's
	// markers.
	markerBackoff = 100 * time.Millisecond
)

// Markers writes the markers that end a transaction in its partitions.
// The broker implements it with WriteTxnMarkers to each partition's leader.
type Markers interface {
	// Write returns once every partition of job has its marker committed
	// (below the high watermark), or no longer exists; an error means some
	// did not, and the coordinator tries again after a pause.
	Write(ctx context.Context, job MarkerJob) error
}

// MarkerJob is one transaction's markers.
type MarkerJob struct {
	TxnID            string
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// Config configures a Coordinator. Log, Clock, Markers and NewProducerID
// are required.
type Config struct {
	Log     coordlog.Log
	Clock   clock.Clock
	Logger  *slog.Logger
	Markers Markers
	// NewProducerID allocates a producer id never given before.
	NewProducerID func(ctx context.Context) (int64, error)
	// CoordinatorEpoch is the leader epoch of the partition the coordinator
	// was loaded at: it goes into every marker, so that a partition refuses
	// the markers of a coordinator that lost the partition since.
	CoordinatorEpoch int32
	MaxTimeout       time.Duration
	AbortInterval    time.Duration
	// IDExpiration: zero is DefaultIDExpiration, negative never.
	IDExpiration time.Duration
	// CompactMinBytes: __transaction_state is compacted once it holds
	// coordlog.DefaultCompactRatio records per live id and at least this
	// many bytes (zero: coordlog's default; negative: never).
	CompactMinBytes int64
}

// Coordinator runs a Core on the broker's goroutines: it keeps the
// Core's API for the broker's handlers (each call waits for its answer),
// appends through the compacted log and waits for each append to commit
// in a goroutine, writes marker jobs through Markers in goroutines, and
// ticks the Core on the clock. Safe for concurrent use.
type Coordinator struct {
	cfg    Config
	ctx    context.Context // ends at Close: writes and marker jobs stop
	cancel context.CancelFunc
	bg     sync.WaitGroup
	lg     *coordlog.Keyed // __transaction_state, compacted: every append goes through it
	poke   chan struct{}   // the tick loop's deadline moved earlier

	mu       sync.Mutex // one driver of core at a time
	core     *Core
	closed   bool
	token    uint64
	waiting  map[uint64]chan Answer   // requests waiting for their answer
	appended map[uint64]chan struct{} // internal appends someone waits for
	deadline time.Time
}

// errClosing fails the appends a closed coordinator is asked for.
var errClosing = fmt.Errorf("transaction coordinator closing: %w", context.Canceled)

// Open replays cfg.Log and returns the coordinator of the ids found in it.
// Transactions found decided but not complete get their markers written
// again; open ones are aborted when they time out.
func Open(cfg Config) (*Coordinator, error) {
	if cfg.Log == nil || cfg.Clock == nil || cfg.Markers == nil || cfg.NewProducerID == nil {
		return nil, errors.New("txn: Config needs Log, Clock, Markers and NewProducerID")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	metas, found, err := Replay(cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("txn: load: %w", err)
	}
	c := &Coordinator{cfg: cfg, poke: make(chan struct{}, 1), waiting: map[uint64]chan Answer{}, appended: map[uint64]chan struct{}{}}
	c.core = NewCore(CoreConfig{Logger: cfg.Logger, CoordinatorEpoch: cfg.CoordinatorEpoch, MaxTimeout: cfg.MaxTimeout,
		AbortInterval: cfg.AbortInterval, IDExpiration: cfg.IDExpiration}, metas)
	c.lg = coordlog.NewKeyed(coordlog.KeyedConfig{Log: cfg.Log, Clock: cfg.Clock, Logger: cfg.Logger, Name: "__transaction_state",
		CompactMinBytes: cfg.CompactMinBytes}, found)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	cfg.Logger.Info("transaction coordinator loaded", "transactional_ids", len(metas))
	c.mu.Lock()
	c.perform(c.core.Start(cfg.Clock.Now()))
	c.mu.Unlock()
	c.bg.Add(1)
	go c.tickLoop()
	return c, nil
}

// Close stops the coordinator: marker writes under way stop (the next
// coordinator of the partition writes them again), later calls answer
// NOT_COORDINATOR.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.closed = true
	c.perform(c.core.ReleaseHeld(c.cfg.Clock.Now()))
	c.mu.Unlock()
	c.lg.Close()
	c.cancel()
	c.bg.Wait()
	return nil
}

// perform does what out asks (c.mu held): appends in order, in one batch
// waited for in a goroutine; marker jobs in goroutines; answers to their
// callers; the tick loop told of an earlier deadline. An append that fails at once
// is reported to the core at once, and so on until nothing is left.
func (c *Coordinator) perform(out Output) {
	for {
		var more Output
		if err := c.startAppends(out.Appends); err != nil {
			for _, a := range out.Appends {
				more = merge(more, c.core.Appended(a.Token, err, c.cfg.Clock.Now()))
			}
		}
		for _, j := range out.Jobs {
			c.startJob(j)
		}
		for _, a := range out.Answers {
			if ch, ok := c.waiting[a.Token]; ok {
				delete(c.waiting, a.Token)
				ch <- a
			}
		}
		if !out.Deadline.IsZero() && (c.deadline.IsZero() || out.Deadline.Before(c.deadline)) {
			c.deadline = out.Deadline
			select {
			case c.poke <- struct{}{}:
			default:
			}
		} else if !out.Deadline.IsZero() {
			c.deadline = out.Deadline
		}
		if more.Empty() {
			return
		}
		out = more
	}
}

// merge is a then b, as one Output.
func merge(a, b Output) Output {
	a.Appends = append(a.Appends, b.Appends...)
	a.Jobs = append(a.Jobs, b.Jobs...)
	a.Answers = append(a.Answers, b.Answers...)
	if !b.Deadline.IsZero() {
		a.Deadline = b.Deadline
	}
	return a
}

// startAppends appends the records of as, in order, as one batch and
// waits in a goroutine until it is committed; an error is the append's
// own, for every one of as. One batch for what one event asks (a
// transaction's Complete state and the next one's Ongoing state, the
// aborts of a tick) is one replication round, where records appended one
// by one could each catch the log's group commit just after it started
// and wait for the next.
func (c *Coordinator) startAppends(as []Append) error {
	if len(as) == 0 {
		return nil
	}
	if c.closed {
		return errClosing
	}
	recs := make([]batch.KV, len(as))
	for i, a := range as {
		recs[i] = a.Record
	}
	end, err := c.lg.Append(recs, c.cfg.Clock.Now())
	if err != nil {
		return err
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		err := c.cfg.Log.WaitDurable(c.ctx, end)
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, a := range as {
			c.perform(c.core.Appended(a.Token, err, c.cfg.Clock.Now()))
			if ch, ok := c.appended[a.Token]; ok {
				delete(c.appended, a.Token)
				close(ch)
			}
		}
	}()
	return nil
}

// startJob writes j's markers in a goroutine and reports the outcome.
func (c *Coordinator) startJob(j Job) {
	if c.closed {
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		err := c.cfg.Markers.Write(c.ctx, j.MarkerJob)
		if c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.perform(c.core.MarkersWritten(j.Token, err, c.cfg.Clock.Now()))
	}()
}

// tickLoop ticks the core at the deadline it asks for.
func (c *Coordinator) tickLoop() {
	defer c.bg.Done()
	for {
		c.mu.Lock()
		d := c.deadline.Sub(c.cfg.Clock.Now())
		c.mu.Unlock()
		if d > 0 {
			t := c.cfg.Clock.NewTimer(d)
			select {
			case <-t.C():
			case <-c.poke:
				t.Stop()
				continue
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.deadline = time.Time{}
		c.perform(c.core.Tick(c.cfg.Clock.Now()))
		c.mu.Unlock()
	}
}

// call hands req to the core and waits for its answer.
func (c *Coordinator) call(req Request) Answer {
	ch := make(chan Answer, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Answer{ProducerID: -1, Epoch: -1, Code: kerr.NotCoordinator.Code, Codes: fill(len(req.Partitions), kerr.NotCoordinator.Code)}
	}
	c.token++
	req.Token = c.token
	c.waiting[req.Token] = ch
	c.perform(c.core.Handle(req, c.cfg.Clock.Now()))
	c.mu.Unlock()
	return <-ch
}

func fill(n int, code int16) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = code
	}
	return out
}

// internal runs one of the core's own scans now and waits until every
// append in flight then (the scan's, and those of a tick or request that
// got there first) is done.
func (c *Coordinator) internal(scan func(*Core, time.Time) Output) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.perform(scan(c.core, c.cfg.Clock.Now()))
	var waits []chan struct{}
	for tok := range c.core.writes {
		ch, ok := c.appended[tok]
		if !ok {
			ch = make(chan struct{})
			c.appended[tok] = ch
		}
		waits = append(waits, ch)
	}
	c.mu.Unlock()
	for _, ch := range waits {
		<-ch
	}
}

// ExpireIDs forgets every transactional id with no transaction open or
// being decided that has not changed for IDExpiration (see
// Core.ExpireIDs), and returns once the tombstones are committed or
// failed. The coordinator does it every AbortInterval; tests call it
// directly.
func (c *Coordinator) ExpireIDs() { c.internal((*Core).ExpireIDs) }

// AbortExpired aborts every transaction past its timeout now, fencing its
// producer (the abort bumps the epoch), and returns once the aborts are
// decided (committed in the log) or failed. The coordinator does it every
// AbortInterval; tests call it directly.
func (c *Coordinator) AbortExpired() { c.internal((*Core).AbortExpired) }

// InitProducerID gives id's producer its id and epoch (InitProducerId with
// a transactional id).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, in InitRequest) (int64, int16, int16) {
	req := Request{Kind: KindInit, ID: id, Init: in, NewProducerID: -1}
	for {
		a := c.call(req)
		if !a.NeedProducerID {
			return a.ProducerID, a.Epoch, a.Code
		}
		pid, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			c.cfg.Logger.Warn("txn: allocating a producer id", "transactional_id", id, "err", err)
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		req.NewProducerID = pid
	}
}

// AddPartitions adds parts to pr's transaction of id (AddPartitionsToTxn,
// and AddOffsetsToTxn with the group's __consumer_offsets partition).
func (c *Coordinator) AddPartitions(id string, pr Producer, parts []TopicPartition) int16 {
	return c.call(Request{Kind: KindAdd, ID: id, Producer: pr, Partitions: parts}).Code
}

// AddForWrite is AddPartitions for a partition leader whose write opens
// the transaction there (KIP-890's second part): while the id's last
// transaction's markers are under way, it waits for them (up to WaitMax)
// instead of answering CONCURRENT_TRANSACTIONS at once (Request.Wait).
func (c *Coordinator) AddForWrite(id string, pr Producer, parts []TopicPartition) int16 {
	return c.call(Request{Kind: KindAdd, ID: id, Producer: pr, Partitions: parts, Wait: true}).Code
}

// Verify answers a partition leader's question (AddPartitionsToTxn v4+
// with VerifyOnly, KIP-890): is each of parts in pr's ongoing transaction
// of id? 0 for those that are.
func (c *Coordinator) Verify(id string, pr Producer, parts []TopicPartition) []int16 {
	return c.call(Request{Kind: KindVerify, ID: id, Producer: pr, Partitions: parts}).Codes
}

// EndTxn commits or aborts pr's transaction of id. tv2 is an EndTxn v5+
// (KIP-890 part 2): the epoch is bumped and the new one returned.
func (c *Coordinator) EndTxn(id string, pr Producer, commit, tv2 bool) (int64, int16, int16) {
	a := c.call(Request{Kind: KindEnd, ID: id, Producer: pr, Commit: commit, TV2: tv2})
	return a.ProducerID, a.Epoch, a.Code
}

// Meta returns a copy of id's committed meta.
func (c *Coordinator) Meta(id string) (*Meta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Meta(id)
}

// Metas returns a copy of every id's meta, by id.
func (c *Coordinator) Metas() []*Meta {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Metas()
}

// Replay reads the whole log: the latest record of each id wins, a
// tombstone deletes. It returns the metas found, for NewCore, and what a
// coordlog.Keyed over the log needs.
func Replay(log coordlog.Log) (map[string]*Meta, coordlog.Loaded, error) {
	metas := map[string]*Meta{}
	found := coordlog.Loaded{Live: map[string][]byte{}, Start: log.StartOffset()}
	var bad error
	off := found.Start
	for {
		data, err := log.Read(off, 1<<20)
		if err != nil {
			return nil, found, err
		}
		if len(data) == 0 {
			break
		}
		next, err := batch.Records(data, func(_ int64, r kmsg.Record) {
			id, m, err := decodeRecord(r.Key, r.Value)
			switch {
			case err != nil:
				bad = err
			case m == nil:
				delete(metas, id)
				delete(found.Live, string(r.Key))
			default:
				metas[id] = m
				found.Live[string(r.Key)] = bytes.Clone(r.Value)
			}
		}, func(error) {})
		if err != nil {
			return nil, found, err
		}
		if bad != nil {
			return nil, found, bad
		}
		if next <= off {
			return nil, found, fmt.Errorf("replay: no progress at %d", off)
		}
		off = next
		found.Bytes += int64(len(data))
	}
	found.End = off
	return metas, found, nil
}
