package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
)

// Transactions. With ProduceConfig.Txn every client of Produce is a
// transactional producer (kgo.TransactionalID: ID-0, ID-1, ...) writing
// its share in transactions of Txn.Records records, closed loop: begin,
// produce the records, wait for every acknowledgement (Flush), commit
// (EndTxn), then the next. Every AbortEvery-th transaction of a client is
// aborted instead, so that the log holds aborted transactions for a
// read_committed consumer to skip. Records and Bytes count what was
// committed; the aborted are counted apart (TxnResult). A transaction
// with a failed record is aborted and its failures counted; a client
// whose transaction cannot end stops, its records counted failed.
//
// TxnProducer is one such client driven a transaction at a time, for a
// workload whose steps act between a transaction's writes and its end.

// Txn makes a producer workload transactional.
type Txn struct {
	// Records in each transaction (a client's last may hold fewer).
	Records int `json:"records"`
	// AbortEvery aborts every AbortEvery-th transaction of each client
	// (0: none).
	AbortEvery int `json:"abort_every,omitempty"`
	// ID prefixes the clients' transactional ids (default "load").
	ID string `json:"id,omitempty"`
}

func (t *Txn) check(c *ProduceConfig) error {
	if t == nil {
		return nil
	}
	switch {
	case t.Records <= 0:
		return configErr("transactions of %d records", t.Records)
	case t.AbortEvery < 0:
		return configErr("negative abort_every")
	case c.Rate > 0:
		return configErr("transactions run closed loop, not at a rate")
	case !c.Idempotent:
		return configErr("a transactional producer is idempotent: set Idempotent")
	}
	if t.ID == "" {
		own := *t
		own.ID = "load"
		c.Txn = &own
	}
	return nil
}

// opts are the options of client i: its transactional id.
func (t *Txn) opts(i int) []kgo.Opt {
	if t == nil {
		return nil
	}
	return []kgo.Opt{kgo.TransactionalID(fmt.Sprintf("%s-%d", t.ID, i))}
}

// TxnResult is what the transactions of a producer workload measured.
type TxnResult struct {
	Committed      int64 `json:"committed"`
	Aborted        int64 `json:"aborted"`
	AbortedRecords int64 `json:"aborted_records"`
	// Latency runs from BeginTransaction to the commit's answer, End from
	// the EndTxn request (after the flush) to its answer; committed
	// transactions only.
	Latency bench.Summary `json:"latency"`
	End     bench.Summary `json:"end"`
}

// txnTally is what every client's transactions add up to.
type txnTally struct {
	committed, aborted, abortedRecords atomic.Int64
	lat, end                           *bench.Latency
}

func newTxnTally() *txnTally {
	return &txnTally{lat: bench.NewLatency(), end: bench.NewLatency()}
}

func (t *txnTally) result() TxnResult {
	return TxnResult{Committed: t.committed.Load(), Aborted: t.aborted.Load(),
		AbortedRecords: t.abortedRecords.Load(), Latency: t.lat.Summary(), End: t.end.Summary()}
}

// runTxns writes the client's share in transactions until it is written
// or loopCtx ends.
func (p *producer) runTxns(loopCtx, ctx context.Context, start time.Time) {
	p.measureFrom = start.Add(p.cfg.Warmup)
	t := p.cfg.Txn
	unbounded := p.cfg.Records == 0
	for n, sent := int64(1), int64(0); unbounded || sent < p.records; n++ {
		if loopCtx.Err() != nil {
			return
		}
		size := int64(t.Records)
		if !unbounded {
			size = min(size, p.records-sent)
		}
		commit := t.AbortEvery == 0 || n%int64(t.AbortEvery) != 0
		begun := time.Now()
		w, err := p.write(ctx, p.first+sent, size)
		if err == nil {
			err = p.end(ctx, w, commit, begun)
		}
		if err != nil {
			return
		}
		sent += size
	}
}

// txnWrite is what a transaction's records came to.
type txnWrite struct {
	acked, bytes, failed int64
	err                  error
}

// write begins a transaction and produces records [first, first+size)
// in it, returning once each has its answer.
func (p *producer) write(ctx context.Context, first, size int64) (txnWrite, error) {
	if err := p.cl.BeginTransaction(); err != nil {
		err = fmt.Errorf("load: begin transaction: %w", err)
		p.fail(size, err)
		return txnWrite{}, err
	}
	var mu sync.Mutex
	var w txnWrite
	for i := range size {
		sendAt := time.Now()
		p.produce(ctx, first+i, sendAt, func(n int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				w.failed++
				w.err = cmpErr(w.err, err)
				return
			}
			w.acked, w.bytes = w.acked+1, w.bytes+int64(n)
			p.measure(sendAt)
		})
	}
	// Flush returns once every record has its answer.
	_ = p.cl.Flush(context.WithoutCancel(ctx))
	mu.Lock()
	defer mu.Unlock()
	return w, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// end commits the transaction w wrote, or aborts it (when asked, or when
// a record failed), and counts it.
func (p *producer) end(ctx context.Context, w txnWrite, commit bool, begun time.Time) error {
	if w.failed > 0 {
		p.fail(w.failed, w.err)
		commit = false
	}
	endAt := time.Now()
	if err := p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		err = fmt.Errorf("load: end transaction (commit %v): %w", commit, err)
		p.fail(w.acked, err)
		return err
	}
	t := p.txns
	if !commit {
		t.aborted.Add(1)
		t.abortedRecords.Add(w.acked)
		return nil
	}
	now := time.Now()
	t.committed.Add(1)
	t.lat.Record(now.Sub(begun))
	t.end.Record(now.Sub(endAt))
	p.acked.Add(w.acked)
	p.bytes.Add(w.bytes)
	return nil
}

// TxnProducer is one transactional producer whose transactions the caller
// begins and ends, a transaction at a time.
type TxnProducer struct {
	p *producer
	// next is the index of the next record; open the transaction begun
	// and not yet ended.
	next  int64
	open  *txnWrite
	begun time.Time
}

// NewTxnProducer makes the transactional client of cfg: its Client,
// Topic, RecordBytes, Keys and Txn.ID (the transactional id as it is);
// the record count, duration and the rest of Txn are the caller's.
func NewTxnProducer(cfg ProduceConfig) (*TxnProducer, error) {
	if cfg.Txn == nil || cfg.Txn.ID == "" {
		return nil, configErr("a transactional producer needs a transactional id")
	}
	// Records are the caller's to say, at each Begin.
	own := *cfg.Txn
	own.Records = max(own.Records, 1)
	cfg.Txn, cfg.Records, cfg.Idempotent = &own, max(cfg.Records, 1), true
	if err := cfg.check(); err != nil {
		return nil, err
	}
	opts, err := cfg.clientOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.TransactionalID(cfg.Txn.ID))...)
	if err != nil {
		return nil, fmt.Errorf("load: transactional client: %w", err)
	}
	p := &producer{cfg: &cfg, cl: cl, payload: bench.NewPayload(cfg.Seed, max(1<<20, 4*cfg.RecordBytes)),
		lat: bench.NewLatency(), acked: new(atomic.Int64), txns: newTxnTally()}
	return &TxnProducer{p: p}, nil
}

// ID is the producer's transactional id.
func (t *TxnProducer) ID() string { return t.p.cfg.Txn.ID }

// Begin begins a transaction and writes records to it, returning once
// every one is acknowledged.
func (t *TxnProducer) Begin(ctx context.Context, records int64) error {
	if t.open != nil {
		return fmt.Errorf("load: a transaction of %s is open", t.ID())
	}
	begun := time.Now()
	w, err := t.p.write(ctx, t.next, records)
	if err != nil {
		return err
	}
	t.next += records
	t.open, t.begun = &w, begun
	if w.failed > 0 {
		return fmt.Errorf("load: %d of %d records of the transaction failed: %w", w.failed, records, w.err)
	}
	return nil
}

// End commits the open transaction, or aborts it.
func (t *TxnProducer) End(ctx context.Context, commit bool) error {
	if t.open == nil {
		return fmt.Errorf("load: no transaction of %s is open", t.ID())
	}
	w := *t.open
	t.open = nil
	return t.p.end(ctx, w, commit, t.begun)
}

// Close closes the client; an open transaction is left to its timeout.
func (t *TxnProducer) Close() { t.p.cl.Close() }
