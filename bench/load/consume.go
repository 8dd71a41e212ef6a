package load

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
)

// ConsumeConfig describes a consumer workload: one client reading every
// partition of a topic.
type ConsumeConfig struct {
	Client
	Topic string `json:"topic"`
	// Records to read before stopping; 0 means until Duration or ctx ends.
	Records  int64         `json:"records"`
	Duration time.Duration `json:"duration_ns"`
	// From says where each partition starts: nil reads from the log start;
	// otherwise the offsets given (see EndOffsets), and partitions missing
	// from the map start at the log end.
	From map[int32]int64 `json:"-"`
	// FetchMaxBytes and FetchMaxPartitionBytes override franz-go's defaults
	// when positive.
	FetchMaxBytes          int32 `json:"fetch_max_bytes"`
	FetchMaxPartitionBytes int32 `json:"fetch_max_partition_bytes"`
	// ReadCommitted reads at isolation level read_committed: up to the
	// last stable offset, without the records of aborted transactions.
	ReadCommitted bool `json:"read_committed,omitempty"`
	// Idle ends the run with an error when no record arrives for this long
	// while records are still expected; 0 means 30 s.
	Idle     time.Duration    `json:"idle_ns"`
	Progress func(read int64) `json:"-"`
	// Check, when set, sees every record (tests verify content with it).
	Check func(*kgo.Record) `json:"-"`

	// onRead, when set, gets the running count after every poll.
	onRead func(total int64)
}

// ConsumeResult is what a consumer workload measured.
type ConsumeResult struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Elapsed       float64 `json:"elapsed_s"`
	RecordsPerSec float64 `json:"records_per_s"`
	MBPerSec      float64 `json:"mb_per_s"`
	// EndToEnd is from the record's (intended) send time to its arrival
	// here, for stamped records (see StampBytes).
	EndToEnd bench.Summary `json:"end_to_end"`
}

// ErrIdle: the consumer waited Idle without a record while it still
// expected some.
var ErrIdle = errors.New("load: consumer idle")

const defaultIdle = 30 * time.Second

// Consume reads until Records have arrived, Duration passes or ctx ends.
// A run that stops early because nothing arrives returns what it measured
// together with ErrIdle.
func Consume(ctx context.Context, cfg ConsumeConfig) (ConsumeResult, error) {
	if cfg.Topic == "" {
		return ConsumeResult{}, configErr("no topic")
	}
	if cfg.Records < 0 || (cfg.Records == 0 && cfg.Duration <= 0 && ctx.Done() == nil && cfg.onRead == nil) {
		return ConsumeResult{}, configErr("want a positive record count, a duration or a context that ends")
	}
	opts, err := cfg.Client.options()
	if err != nil {
		return ConsumeResult{}, err
	}
	opts = append(opts, consumeOpts(&cfg)...)
	opts = append(opts, cfg.Client.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return ConsumeResult{}, fmt.Errorf("load: consumer client: %w", err)
	}
	defer cl.Close()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	if cfg.Idle <= 0 {
		cfg.Idle = defaultIdle
	}
	return consumeLoop(ctx, cl, &cfg)
}

func consumeOpts(cfg *ConsumeConfig) []kgo.Opt {
	var opts []kgo.Opt
	if cfg.From == nil {
		opts = append(opts, kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		parts := make(map[int32]kgo.Offset, len(cfg.From))
		for p, o := range cfg.From {
			parts[p] = kgo.NewOffset().At(o)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: parts}))
	}
	if cfg.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(cfg.FetchMaxBytes))
	}
	if cfg.FetchMaxPartitionBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(cfg.FetchMaxPartitionBytes))
	}
	if cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	return opts
}

func consumeLoop(ctx context.Context, cl *kgo.Client, cfg *ConsumeConfig) (ConsumeResult, error) {
	e2e := bench.NewLatency()
	var res ConsumeResult
	var read atomic.Int64
	stop := startProgress(cfg.Progress, &read)
	defer stop()
	start := time.Now()
	lastRecord := start
	for cfg.Records == 0 || res.Records < cfg.Records {
		pctx, cancel := context.WithDeadline(ctx, lastRecord.Add(cfg.Idle))
		fetches := cl.PollFetches(pctx)
		cancel()
		now := time.Now()
		if err := firstFetchErr(fetches); err != nil {
			res.finish(start, now, e2e)
			return res, err
		}
		n := int64(0)
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			res.Bytes += int64(len(r.Key) + len(r.Value))
			if t, ok := SentAt(r.Value); ok {
				e2e.Record(now.Sub(t))
			}
			if cfg.Check != nil {
				cfg.Check(r)
			}
		})
		res.Records += n
		read.Store(res.Records)
		if cfg.onRead != nil {
			cfg.onRead(res.Records)
		}
		if n > 0 {
			lastRecord = now
		}
		if ctx.Err() != nil {
			break
		}
		if n == 0 && now.Sub(lastRecord) >= cfg.Idle {
			res.finish(start, now, e2e)
			return res, fmt.Errorf("%w: nothing for %v after %d records", ErrIdle, cfg.Idle, res.Records)
		}
	}
	res.finish(start, time.Now(), e2e)
	return res, nil
}

func (r *ConsumeResult) finish(start, end time.Time, e2e *bench.Latency) {
	elapsed := end.Sub(start)
	r.Elapsed = elapsed.Seconds()
	r.RecordsPerSec = Rate(r.Records, elapsed)
	r.MBPerSec = Rate(r.Bytes, elapsed) / 1e6
	r.EndToEnd = e2e.Summary()
}

// firstFetchErr returns the first error that ends a consumer run; a context
// end is not one (the loop decides what it means).
func firstFetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if first != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		first = fmt.Errorf("load: fetch %s[%d]: %w", t, p, err)
	})
	return first
}
