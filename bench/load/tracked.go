package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
)

// TrackedConfig is a producer whose every acknowledgement is kept, for
// the faults of a cluster: franz-go's idempotent producer with acks=all,
// open loop at Rate, records spread round-robin over Partitions, each
// value unique ("tracked-%09d" then payload), retried without limit so
// that a fault delays records instead of failing them.
type TrackedConfig struct {
	Client
	Topic       string
	Partitions  int32
	Rate        float64 // records per second
	RecordBytes int
}

// Ack is where a record was acknowledged.
type Ack struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// Write is one batch a broker acknowledged: when the producer learned
// it, which broker, which partition, how many records.
type Write struct {
	At        time.Time
	Node      int32
	Partition int32
	Records   int
}

// Tracked is a running tracked producer.
type Tracked struct {
	cfg    TrackedConfig
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	acked    map[string]Ack
	writes   []Write
	failed   int64
	firstErr error
}

// StartTracked starts producing; Stop ends it.
func StartTracked(ctx context.Context, cfg TrackedConfig) (*Tracked, error) {
	switch {
	case cfg.Topic == "" || cfg.Partitions < 1:
		return nil, configErr("a tracked producer needs a topic and its partition count")
	case cfg.Rate <= 0:
		return nil, configErr("a tracked producer needs a rate")
	case cfg.RecordBytes < trackedIDBytes:
		return nil, configErr("tracked records hold at least %d bytes", trackedIDBytes)
	}
	opts, err := cfg.Client.options()
	if err != nil {
		return nil, err
	}
	t := &Tracked{cfg: cfg, acked: map[string]Ack{}, done: make(chan struct{})}
	opts = append(opts,
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithHooks(writesHook{t}),
		// A fault shows as a delay, not as failed records: retry until
		// Stop, and learn of new leaders as soon as franz-go allows.
		kgo.RecordDeliveryTimeout(0),
		kgo.RetryTimeout(0),
		kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
	)
	if t.cl, err = kgo.NewClient(append(opts, cfg.Client.Opts...)...); err != nil {
		return nil, fmt.Errorf("load: tracked producer: %w", err)
	}
	pctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	go t.run(pctx)
	return t, nil
}

// trackedIDBytes is the length of a tracked value's id.
const trackedIDBytes = len("tracked-000000000")

func trackedID(i int64) string { return fmt.Sprintf("tracked-%09d", i) }

// TrackedValueID is the id a tracked producer's value starts with (the key
// of TrackedResult.Acked), and false for a value of someone else's.
func TrackedValueID(v []byte) (string, bool) {
	if len(v) < trackedIDBytes || !bytes.HasPrefix(v, []byte("tracked-")) {
		return "", false
	}
	return string(v[:trackedIDBytes]), true
}

func (t *Tracked) run(ctx context.Context) {
	defer close(t.done)
	payload := make([]byte, t.cfg.RecordBytes)
	interval := time.Duration(float64(time.Second) / t.cfg.Rate)
	start := time.Now()
	for i := int64(0); ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > sleepMin && !bench.Pause(ctx, wait) {
			break
		}
		id := trackedID(i)
		v := make([]byte, len(payload))
		copy(v, payload)
		copy(v, id)
		r := &kgo.Record{Value: v, Partition: int32(i % int64(t.cfg.Partitions))}
		t.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if err != nil {
				t.failed++
				if t.firstErr == nil && !errors.Is(err, context.Canceled) {
					t.firstErr = err
				}
				return
			}
			t.acked[id] = Ack{Partition: r.Partition, Offset: r.Offset}
		})
	}
}

// writesHook records every acknowledged batch.
type writesHook struct{ t *Tracked }

func (h writesHook) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, partition int32, m kgo.ProduceBatchMetrics) {
	now := time.Now()
	h.t.mu.Lock()
	h.t.writes = append(h.t.writes, Write{At: now, Node: meta.NodeID, Partition: partition, Records: m.NumRecords})
	h.t.mu.Unlock()
}

// Writes are the batches acknowledged so far, in the order the producer
// learned of them, from the i-th on (0: all of them): a poller passes the
// count it has seen.
func (t *Tracked) Writes(i int) []Write {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i >= len(t.writes) {
		return nil
	}
	return append([]Write(nil), t.writes[max(i, 0):]...)
}

// LongestGap is the longest time between two consecutive acknowledged
// batches of one partition (of those in only, all when nil) whose second
// falls in [from, to], or from a partition's last acknowledgement to to (a
// stall not over yet).
func LongestGap(ws []Write, only map[int32]bool, from, to time.Time) time.Duration {
	return WidestGap(ws, only, from, to).Length()
}

// Gap is a time without acknowledgements on one partition.
type Gap struct {
	Partition int32
	From, To  time.Time
}

// Length is how long the gap lasted.
func (g Gap) Length() time.Duration { return g.To.Sub(g.From) }

// WidestGap is LongestGap's gap with where and when it was (the zero Gap
// when no partition was acknowledged).
func WidestGap(ws []Write, only map[int32]bool, from, to time.Time) Gap {
	last := map[int32]time.Time{}
	var widest Gap
	for _, w := range ws {
		if (only != nil && !only[w.Partition]) || w.At.After(to) {
			continue
		}
		if prev, ok := last[w.Partition]; ok && !w.At.Before(from) && w.At.Sub(prev) > widest.Length() {
			widest = Gap{Partition: w.Partition, From: prev, To: w.At}
		}
		last[w.Partition] = w.At
	}
	for p, at := range last {
		if to.Sub(at) > widest.Length() {
			widest = Gap{Partition: p, From: at, To: to}
		}
	}
	return widest
}

// TrackedResult is what a tracked producer was told.
type TrackedResult struct {
	// Acked maps each acknowledged value's id to where it was stored.
	Acked map[string]Ack
	// Failed counts records that were not acknowledged: only those still
	// in flight when Stop gave up on them.
	Failed     int64
	FirstError string
}

// Stop stops producing, waits up to flush for the records in flight, and
// fails the rest (their callbacks run before Stop returns).
func (t *Tracked) Stop(flush time.Duration) TrackedResult {
	t.cancel()
	<-t.done
	fctx, cancel := context.WithTimeout(context.Background(), flush)
	defer cancel()
	_ = t.cl.Flush(fctx)
	t.cl.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	res := TrackedResult{Acked: t.acked, Failed: t.failed}
	if t.firstErr != nil {
		res.FirstError = t.firstErr.Error()
	}
	return res
}

// AuditResult is what a consumer found of the acknowledged records.
type AuditResult struct {
	Acked    int   `json:"acked"`
	Consumed int64 `json:"consumed"`
	// Lost are acknowledged records not found; Duplicated found more than
	// once; Misplaced found once but not at the partition and offset they
	// were acknowledged at.
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	Misplaced  int `json:"misplaced"`
	// Of a consumer's polls (Audit's polls): an offset read after a
	// greater or equal one, records of the log skipped between two
	// polled offsets, an offset read holding another record than at the
	// end.
	Nonmonotonic   int `json:"nonmonotonic,omitempty"`
	PollSkips      int `json:"poll_skips,omitempty"`
	ReadMismatches int `json:"read_mismatches,omitempty"`
}

// Anomalies adds up every count of something that must not happen.
func (a AuditResult) Anomalies() int {
	return a.Lost + a.Duplicated + a.Misplaced + a.Nonmonotonic + a.PollSkips + a.ReadMismatches
}

// Audit reads topic from its start up to its end offsets, once they cover
// every acknowledged offset (a restarted leader's high watermark catches
// up as its followers fetch), and checks each acknowledged record: there,
// exactly once, where it was acknowledged; then what a consumer polled
// meanwhile (polls, nil when none ran) against the log read back.
func Audit(ctx context.Context, c Client, topic string, acked map[string]Ack, polls Polls) (AuditResult, error) {
	res := AuditResult{Acked: len(acked)}
	need := map[int32]int64{}
	for _, a := range acked {
		need[a.Partition] = max(need[a.Partition], a.Offset+1)
	}
	ends, err := awaitEnds(ctx, c, topic, need)
	if err != nil {
		return res, err
	}
	opts, err := c.options()
	if err != nil {
		return res, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return res, fmt.Errorf("load: audit consumer: %w", err)
	}
	defer cl.Close()
	remaining := int64(0)
	for _, e := range ends {
		remaining += e
	}
	seen := map[string]int{}
	at := map[string]Ack{}
	final := Polls{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("load: audit of %s: %d records left: %w", topic, remaining, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			remaining--
			res.Consumed++
			if polls != nil {
				final[r.Partition] = append(final[r.Partition], Polled{r.Offset, idOf(r.Value)})
			}
			id, ok := TrackedValueID(r.Value)
			if !ok {
				return
			}
			seen[id]++
			at[id] = Ack{Partition: r.Partition, Offset: r.Offset}
		})
	}
	for id, a := range acked {
		switch n := seen[id]; {
		case n == 0:
			res.Lost++
		case n > 1:
			res.Duplicated++
		case at[id] != a:
			res.Misplaced++
		}
	}
	checkPolls(&res, polls, final)
	return res, nil
}

// awaitEnds waits until every partition's end offset reaches need and
// returns the end offsets then.
func awaitEnds(ctx context.Context, c Client, topic string, need map[int32]int64) (map[int32]int64, error) {
	adm, cl, err := c.admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for {
		listed, err := adm.ListEndOffsets(ctx, topic)
		ends := map[int32]int64{}
		ok := err == nil
		if ok {
			listed.Each(func(o kadm.ListedOffset) {
				ends[o.Partition] = o.Offset
				ok = ok && o.Err == nil && o.Offset >= need[o.Partition]
			})
		}
		if ok {
			return ends, nil
		}
		if !bench.Pause(ctx, 50*time.Millisecond) {
			return nil, fmt.Errorf("load: end offsets of %s never covered what was acknowledged: %w", topic, ctx.Err())
		}
	}
}

// Partitions is how many partitions the producer writes to.
func (t *Tracked) Partitions() int32 { return t.cfg.Partitions }
