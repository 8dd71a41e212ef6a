package txn

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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

// Coordinator coordinates the transactional ids of one __transaction_state
// partition: it keeps each id's Meta, serializes the requests of one id,
// writes each change to the log and waits until it is committed before it
// answers, writes the markers of decided transactions and aborts the ones
// that time out. Safe for concurrent use.
type Coordinator struct {
	cfg    Config
	ctx    context.Context // ends at Close: writes and marker loops stop
	cancel context.CancelFunc
	bg     sync.WaitGroup

	mu     sync.Mutex
	txns   map[string]*entry
	closed bool

	lg *coordlog.Keyed // __transaction_state, compacted: every append goes through it
}

// entry is one transactional id: its lock, held across a change's write,
// and its meta.
type entry struct {
	mu   sync.Mutex
	meta *Meta
	// marking: a goroutine writes the markers of meta's transaction.
	marking bool
}

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
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = DefaultAbortInterval
	}
	if cfg.IDExpiration == 0 {
		cfg.IDExpiration = DefaultIDExpiration
	}
	metas, found, err := replay(cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("txn: load: %w", err)
	}
	c := &Coordinator{cfg: cfg, txns: map[string]*entry{}}
	c.lg = coordlog.NewKeyed(coordlog.KeyedConfig{Log: cfg.Log, Clock: cfg.Clock, Logger: cfg.Logger, Name: "__transaction_state",
		CompactMinBytes: cfg.CompactMinBytes}, found)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for id, m := range metas {
		e := &entry{meta: m}
		c.txns[id] = e
		if pending(m) {
			e.marking = true
			c.writeMarkers(e, m)
		}
	}
	cfg.Logger.Info("transaction coordinator loaded", "transactional_ids", len(metas))
	c.bg.Add(1)
	go c.abortLoop()
	return c, nil
}

// Close stops the coordinator: marker writes under way stop (the next
// coordinator of the partition writes them again), later calls answer
// NOT_COORDINATOR.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.lg.Close()
	c.cancel()
	c.bg.Wait()
	return nil
}

// lookup is id's entry, created (with no meta) if create; nil once closed.
func (c *Coordinator) lookup(id string, create bool) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	e := c.txns[id]
	if e == nil && create {
		e = &entry{}
		c.txns[id] = e
	}
	return e
}

// apply carries out st on e (e.mu held): it writes st.Next, waits until it
// is committed, keeps it, and starts its markers if asked. It returns the
// code to answer.
func (c *Coordinator) apply(e *entry, st Step) int16 {
	if st.Next == nil {
		return st.Code
	}
	if err := c.store(st.Next); err != nil {
		c.cfg.Logger.Warn("txn: store failed", "transactional_id", st.Next.ID, "err", err)
		return coordlog.ErrorCode(err)
	}
	e.meta = st.Next
	if st.Markers {
		e.marking = true
		c.writeMarkers(e, st.Next)
	}
	return st.Code
}

// store writes m's record and waits until it is committed.
func (c *Coordinator) store(m *Meta) error {
	end, err := c.lg.Append([]batch.KV{{Key: recordKey(m.ID), Value: m.recordValue()}}, c.cfg.Clock.Now())
	if err != nil {
		return err
	}
	return c.cfg.Log.WaitDurable(c.ctx, end)
}

// writeMarkers writes the markers of m's decided transaction in the
// background, then its Complete state.
func (c *Coordinator) writeMarkers(e *entry, m *Meta) {
	job := MarkerJob{
		TxnID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, Commit: m.State == PrepareCommit,
		CoordinatorEpoch: c.cfg.CoordinatorEpoch, Partitions: m.SortedPartitions(),
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		for {
			err := c.cfg.Markers.Write(c.ctx, job)
			if err == nil {
				break
			}
			if c.ctx.Err() != nil {
				return
			}
			c.cfg.Logger.Info("txn: markers not all written; retrying", "transactional_id", m.ID, "err", err)
			c.pause(markerBackoff)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for c.ctx.Err() == nil {
			next := completed(m, c.cfg.Clock.Now())
			err := c.store(next)
			if err == nil {
				e.meta, e.marking = next, false
				return
			}
			c.cfg.Logger.Warn("txn: storing a completed transaction failed; retrying", "transactional_id", m.ID, "err", err)
			c.pause(markerBackoff)
		}
	}()
}

// pause waits d on the clock, or until Close.
func (c *Coordinator) pause(d time.Duration) {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-c.ctx.Done():
	}
}

// abortLoop aborts the transactions that ran past their timeout and
// forgets the ids unused for IDExpiration.
func (c *Coordinator) abortLoop() {
	defer c.bg.Done()
	for c.ctx.Err() == nil {
		c.pause(c.cfg.AbortInterval)
		c.AbortExpired()
		c.ExpireIDs()
	}
}

// ExpireIDs forgets every transactional id with no transaction open or
// being decided that has not changed for IDExpiration: its record gets a
// tombstone, and a producer that comes back with it starts afresh (a new
// producer id). The coordinator calls it every AbortInterval; tests call
// it directly.
func (c *Coordinator) ExpireIDs() {
	if c.cfg.IDExpiration < 0 {
		return
	}
	for _, id := range c.ids() {
		e := c.lookup(id, false)
		if e == nil {
			return
		}
		e.mu.Lock()
		now := c.cfg.Clock.Now()
		if m := e.meta; m != nil && !pending(m) && m.State != Ongoing && now.Sub(m.Update) > c.cfg.IDExpiration {
			end, err := c.lg.Append([]batch.KV{{Key: recordKey(id)}}, now)
			if err == nil {
				err = c.cfg.Log.WaitDurable(c.ctx, end)
			}
			if err != nil {
				c.cfg.Logger.Warn("txn: expiring a transactional id", "transactional_id", id, "err", err)
			} else {
				c.cfg.Logger.Info("txn: transactional id expired", "transactional_id", id, "unused_for", now.Sub(m.Update))
				e.meta = nil
				c.mu.Lock()
				if c.txns[id] == e {
					delete(c.txns, id)
				}
				c.mu.Unlock()
			}
		}
		e.mu.Unlock()
	}
}

// AbortExpired aborts every transaction past its timeout now, fencing its
// producer (the abort bumps the epoch). The coordinator calls it every
// AbortInterval; tests call it directly.
func (c *Coordinator) AbortExpired() {
	for _, id := range c.ids() {
		e := c.lookup(id, false)
		if e == nil {
			return
		}
		e.mu.Lock()
		if now := c.cfg.Clock.Now(); e.meta != nil && expired(e.meta, now) {
			c.cfg.Logger.Info("txn: aborting a transaction past its timeout", "transactional_id", id,
				"producer_id", e.meta.ProducerID, "epoch", e.meta.Epoch, "timeout", e.meta.Timeout)
			c.apply(e, abortExpired(e.meta, now))
		}
		e.mu.Unlock()
	}
}

func (c *Coordinator) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.txns))
}

// InitProducerID gives id's producer its id and epoch (InitProducerId with
// a transactional id).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, in InitRequest) (int64, int16, int16) {
	e := c.lookup(id, true)
	if e == nil {
		return -1, -1, kerr.NotCoordinator.Code
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st, err := initProducer(e.meta, id, in, c.cfg.Clock.Now(), c.cfg.MaxTimeout, func() (int64, error) { return c.cfg.NewProducerID(ctx) })
	if err != nil {
		c.cfg.Logger.Warn("txn: allocating a producer id", "transactional_id", id, "err", err)
		return -1, -1, kerr.CoordinatorNotAvailable.Code
	}
	if code := c.apply(e, st); code != 0 || e.meta == nil {
		return -1, -1, cmp.Or(code, kerr.CoordinatorNotAvailable.Code)
	}
	return e.meta.ProducerID, e.meta.Epoch, 0
}

// AddPartitions adds parts to pr's transaction of id (AddPartitionsToTxn,
// and AddOffsetsToTxn with the group's __consumer_offsets partition).
func (c *Coordinator) AddPartitions(id string, pr Producer, parts []TopicPartition) int16 {
	e := c.lookup(id, false)
	if e == nil {
		return c.unknown()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return c.apply(e, addPartitions(e.meta, pr, parts, c.cfg.Clock.Now()))
}

// unknown is the answer for an id this coordinator does not know.
func (c *Coordinator) unknown() int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.NotCoordinator.Code
	}
	return kerr.InvalidProducerIDMapping.Code
}

// Verify answers a partition leader's question (AddPartitionsToTxn v4+
// with VerifyOnly, KIP-890): is each of parts in pr's ongoing transaction
// of id? 0 for those that are.
func (c *Coordinator) Verify(id string, pr Producer, parts []TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	e := c.lookup(id, false)
	if e == nil {
		for i := range codes {
			codes[i] = c.unknown()
		}
		return codes
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, tp := range parts {
		codes[i] = verify(e.meta, pr, tp)
	}
	return codes
}

// EndTxn commits or aborts pr's transaction of id. tv2 is an EndTxn v5+
// (KIP-890 part 2): the epoch is bumped and the new one returned.
func (c *Coordinator) EndTxn(id string, pr Producer, commit, tv2 bool) (int64, int16, int16) {
	e := c.lookup(id, false)
	if e == nil {
		return -1, -1, c.unknown()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	code := c.apply(e, endTxn(e.meta, pr, commit, tv2, c.cfg.Clock.Now()))
	if e.meta == nil {
		return -1, -1, code
	}
	return e.meta.ProducerID, e.meta.Epoch, code
}

// Meta returns a copy of id's meta.
func (c *Coordinator) Meta(id string) (*Meta, bool) {
	e := c.lookup(id, false)
	if e == nil {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.meta == nil {
		return nil, false
	}
	return e.meta.clone(), true
}

// Metas returns a copy of every id's meta, by id.
func (c *Coordinator) Metas() []*Meta {
	var out []*Meta
	for _, id := range c.ids() {
		if m, ok := c.Meta(id); ok {
			out = append(out, m)
		}
	}
	return out
}

// replay reads the whole log: the latest record of each id wins, a
// tombstone deletes.
func replay(log coordlog.Log) (map[string]*Meta, coordlog.Loaded, error) {
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
