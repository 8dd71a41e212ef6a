package load

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
)

// ProduceConfig describes a producer workload.
type ProduceConfig struct {
	Client
	Topic string `json:"topic"`
	// Records to produce in total; 0 means run for Duration.
	Records  int64         `json:"records"`
	Duration time.Duration `json:"duration_ns"`
	// RecordBytes is the value size.
	RecordBytes int `json:"record_bytes"`
	// Keys is the number of distinct keys (murmur2-partitioned); 0 sends
	// unkeyed records spread by the client's sticky partitioner.
	Keys        int    `json:"keys"`
	Acks        string `json:"acks"`
	Idempotent  bool   `json:"idempotent"`
	Compression string `json:"compression"`
	// InFlight bounds records produced but not yet acknowledged, per client
	// (franz-go's MaxBufferedRecords). 1 is one record at a time.
	InFlight int `json:"in_flight"`
	// Rate is the target in records per second over all clients; 0 runs
	// closed loop.
	Rate float64 `json:"rate"`
	// Clients is the number of producer clients, each with its own
	// connections; records and rate are split between them.
	Clients int `json:"clients"`
	// Linger is the producer's linger; 0 is franz-go's default (10 ms),
	// negative none: each batch goes out as soon as a request can carry it,
	// as a latency measurement wants.
	Linger time.Duration `json:"linger_ns"`
	// MetadataMinAge is the shortest time between two metadata refreshes
	// of a client (0: franz-go's 5 s). A produce franz-go retries waits for
	// a refresh first, so this bounds how soon it goes again.
	MetadataMinAge time.Duration `json:"metadata_min_age_ns,omitempty"`
	// DeliveryTimeout fails a record not acknowledged in this long; 0 means
	// 30 s. franz-go refuses less than a second.
	DeliveryTimeout time.Duration `json:"delivery_timeout_ns"`
	// Warmup leaves out of the latency figures the records whose (intended)
	// send falls in the first Warmup: the client connecting, fetching
	// metadata and its producer id would otherwise be charged, in open
	// loop, to every record scheduled meanwhile. They count toward the
	// throughput as the others do.
	Warmup time.Duration `json:"warmup_ns,omitempty"`
	// Txn, when set, makes every client a transactional producer that
	// writes its share in transactions (txn.go).
	Txn *Txn `json:"txn,omitempty"`
	// Seed picks the payload bytes.
	Seed uint64 `json:"seed"`
	// Progress, when set, is called about every ProgressEvery with the
	// records acknowledged so far.
	Progress func(acked int64) `json:"-"`
}

// ProgressEvery is how often Progress callbacks run.
const ProgressEvery = 250 * time.Millisecond

// DefaultInFlight matches franz-go's default buffered-record limit.
const DefaultInFlight = 50_000

func (c *ProduceConfig) check() error {
	switch {
	case c.Topic == "":
		return configErr("no topic")
	case c.Records < 0 || (c.Records == 0 && c.Duration <= 0):
		return configErr("want a positive record count or duration")
	case c.RecordBytes < 0:
		return configErr("negative record size")
	case c.Rate < 0:
		return configErr("negative rate")
	case c.Keys < 0 || c.InFlight < 0 || c.Clients < 0:
		return configErr("negative keys, in-flight or clients")
	}
	if err := c.Txn.check(c); err != nil {
		return err
	}
	if c.InFlight == 0 {
		c.InFlight = DefaultInFlight
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
	return nil
}

func (c *ProduceConfig) clientOpts() ([]kgo.Opt, error) {
	opts, err := c.Client.options()
	if err != nil {
		return nil, err
	}
	acks, err := AcksOpts(c.Acks, c.Idempotent)
	if err != nil {
		return nil, err
	}
	codec, err := Codec(c.Compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, acks...)
	opts = append(opts,
		kgo.DefaultProduceTopic(c.Topic),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(c.InFlight),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		// A benchmark reports failures; it does not retry forever.
		kgo.RecordDeliveryTimeout(c.DeliveryTimeout),
	)
	if c.Linger != 0 {
		opts = append(opts, kgo.ProducerLinger(max(c.Linger, 0)))
	}
	if c.MetadataMinAge > 0 {
		opts = append(opts, kgo.MetadataMinAge(c.MetadataMinAge))
	}
	return append(opts, c.Client.Opts...), nil
}

// ProduceResult is what a producer workload measured.
type ProduceResult struct {
	Records int64 `json:"records"`
	// Batches are the record batches acknowledged (franz-go's
	// HookProduceBatchWritten): what the leaders appended for Records.
	Batches       int64   `json:"batches,omitempty"`
	Bytes         int64   `json:"bytes"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	Elapsed       float64 `json:"elapsed_s"`
	RecordsPerSec float64 `json:"records_per_s"`
	MBPerSec      float64 `json:"mb_per_s"`
	// Latency is from the send (closed loop) or the intended send (open
	// loop) to the acknowledgement.
	Latency bench.Summary `json:"latency"`
	// Behind is how far the open-loop schedule fell behind at its worst: the
	// producer could not send at the target rate.
	Behind time.Duration `json:"behind_ns,omitempty"`
	// Transactions, with ProduceConfig.Txn: Records and Bytes count the
	// committed ones only.
	Txns TxnResult `json:"txns,omitzero"`
}

// producer is one client's share of the workload.
type producer struct {
	cfg     *ProduceConfig
	cl      *kgo.Client
	payload *bench.Payload
	lat     *bench.Latency
	acked   *atomic.Int64
	// share of the records and rate, and where in the key/payload space
	// this client starts.
	records int64
	rate    float64
	first   int64
	// measureFrom is the end of the warm-up: latencies of records sent
	// before it are not recorded.
	measureFrom time.Time

	mu       sync.Mutex
	errs     int64
	firstErr error
	bytes    atomic.Int64
	behind   time.Duration
	// txns are the client's transactions so far, with ProduceConfig.Txn.
	txns *txnTally
}

// Produce runs the workload until every record is acknowledged or failed,
// the duration passes or ctx ends. Failed records are counted, not retried;
// the error return is for a workload that could not run at all.
func Produce(ctx context.Context, cfg ProduceConfig) (ProduceResult, error) {
	if err := cfg.check(); err != nil {
		return ProduceResult{}, err
	}
	opts, err := cfg.clientOpts()
	if err != nil {
		return ProduceResult{}, err
	}
	// The duration ends the sending loop, not the records in flight: they
	// are produced under the caller's ctx and waited for.
	loopCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		loopCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	payload := bench.NewPayload(cfg.Seed, max(1<<20, 4*cfg.RecordBytes))
	lat := bench.NewLatency()
	var acked, batches atomic.Int64
	opts = append(opts, kgo.WithHooks(batchCounter{&batches}))
	txns := newTxnTally()
	ps := make([]*producer, cfg.Clients)
	for i := range ps {
		cl, err := kgo.NewClient(append(opts, cfg.Txn.opts(i)...)...)
		if err != nil {
			closeAll(ps)
			return ProduceResult{}, fmt.Errorf("load: producer client: %w", err)
		}
		share, first := split(cfg.Records, cfg.Clients, i)
		ps[i] = &producer{cfg: &cfg, cl: cl, payload: payload, lat: lat, acked: &acked,
			records: share, rate: cfg.Rate / float64(cfg.Clients), first: first, txns: txns}
	}
	defer closeAll(ps)

	stop := startProgress(cfg.Progress, &acked)
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range ps {
		if cfg.Txn != nil {
			wg.Go(func() { p.runTxns(loopCtx, ctx, start) })
		} else {
			wg.Go(func() { p.run(loopCtx, ctx, start) })
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	r := summarize(ps, lat, acked.Load(), elapsed)
	r.Batches = batches.Load()
	if cfg.Txn != nil {
		r.Txns = txns.result()
	}
	return r, nil
}

// batchCounter counts the batches acknowledged.
type batchCounter struct{ n *atomic.Int64 }

func (c batchCounter) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	c.n.Add(1)
}

func summarize(ps []*producer, lat *bench.Latency, acked int64, elapsed time.Duration) ProduceResult {
	r := ProduceResult{Records: acked, Elapsed: elapsed.Seconds(), Latency: lat.Summary()}
	for _, p := range ps {
		p.mu.Lock()
		r.Errors += p.errs
		r.Behind = max(r.Behind, p.behind)
		if p.firstErr != nil && r.FirstError == "" {
			r.FirstError = p.firstErr.Error()
		}
		p.mu.Unlock()
		r.Bytes += p.bytes.Load()
	}
	r.RecordsPerSec = Rate(r.Records, elapsed)
	r.MBPerSec = Rate(r.Bytes, elapsed) / 1e6
	return r
}

// split gives client i of n its share of total and the index of its first
// record.
func split(total int64, n, i int) (share, first int64) {
	base, extra := total/int64(n), total%int64(n)
	share = base
	if int64(i) < extra {
		share++
	}
	first = int64(i)*base + min(int64(i), extra)
	return share, first
}

func closeAll(ps []*producer) {
	for _, p := range ps {
		if p != nil {
			p.cl.Close()
		}
	}
}

// run sends this client's records: closed loop when rate is 0, else on the
// open-loop schedule; then waits for every acknowledgement.
func (p *producer) run(loopCtx, ctx context.Context, start time.Time) {
	var interval time.Duration
	first := int64(0)
	if p.rate > 0 {
		interval = time.Duration(float64(time.Second) / p.rate)
		// The schedule starts once the client is ready: its first record
		// goes alone and is waited for (connections, metadata, producer
		// id), its latency not counted. A schedule started before would
		// owe the broker a backlog of every record due meanwhile, which at
		// a rate near capacity takes seconds to drain and is no property
		// of the broker's steady state.
		if p.records > 0 || p.cfg.Records == 0 {
			p.prime(ctx)
			first = 1
			start = time.Now().Add(-interval) // record 1 is due now
		}
	}
	p.measureFrom = start.Add(p.cfg.Warmup)
	unbounded := p.cfg.Records == 0 // run for the duration
	for i := first; unbounded || i < p.records; i++ {
		if loopCtx.Err() != nil {
			break
		}
		sendAt := time.Now()
		if interval > 0 {
			sendAt = start.Add(time.Duration(i) * interval)
			// Waits shorter than a timer's resolution are not worth a
			// sleep: the record goes out a few microseconds early.
			if wait := time.Until(sendAt); wait > sleepMin {
				if !bench.Pause(loopCtx, wait) {
					break
				}
			} else if wait < 0 {
				p.noteBehind(-wait)
			}
		}
		p.send(ctx, p.first+i, sendAt)
	}
	// Flush returns once every produced record has its callback; on a
	// cancelled context those records fail with the context's error.
	_ = p.cl.Flush(context.WithoutCancel(ctx))
}

// prime sends the client's first record and waits for its answer; its
// latency is not recorded.
func (p *producer) prime(ctx context.Context) {
	done := make(chan struct{})
	p.produce(ctx, p.first, time.Now(), func(size int, err error) {
		if err == nil {
			p.bytes.Add(int64(size))
		}
		p.count(err)
		close(done)
	})
	<-done
}

func (p *producer) noteBehind(d time.Duration) {
	p.mu.Lock()
	p.behind = max(p.behind, d)
	p.mu.Unlock()
}

func (p *producer) send(ctx context.Context, i int64, sendAt time.Time) {
	p.produce(ctx, i, sendAt, func(size int, err error) {
		if err == nil {
			p.bytes.Add(int64(size))
			p.measure(sendAt)
		}
		p.count(err)
	})
}

// measure records the latency of a record sent at sendAt, unless the
// warm-up leaves it out.
func (p *producer) measure(sendAt time.Time) {
	if !sendAt.Before(p.measureFrom) {
		p.lat.Record(time.Since(sendAt))
	}
}

// produce sends record i, stamped with sendAt, and calls done with the
// outcome and, on success, the bytes it carried.
func (p *producer) produce(ctx context.Context, i int64, sendAt time.Time, done func(size int, err error)) {
	v := make([]byte, p.cfg.RecordBytes)
	p.payload.Fill(i, v)
	Stamp(v, sendAt)
	r := &kgo.Record{Value: v}
	if p.cfg.Keys > 0 {
		r.Key = strconv.AppendInt([]byte("key-"), i%int64(p.cfg.Keys), 10)
	}
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		done(len(r.Value)+len(r.Key), err)
	})
}

// count tallies one record's outcome.
func (p *producer) count(err error) {
	if err != nil {
		p.fail(1, err)
		return
	}
	p.acked.Add(1)
}

// fail counts n records failed, err the first reason.
func (p *producer) fail(n int64, err error) {
	p.mu.Lock()
	p.errs += n
	if p.firstErr == nil {
		p.firstErr = err
	}
	p.mu.Unlock()
}

const sleepMin = 20 * time.Microsecond

// startProgress calls fn with the count every ProgressEvery until the
// returned stop is called, which makes one last call.
func startProgress(fn func(int64), n *atomic.Int64) (stop func()) {
	if fn == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fn(n.Load())
			case <-done:
				fn(n.Load())
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
