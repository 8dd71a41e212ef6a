package matrix

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/peer"
)

// Topic is the benchmark topic (Kafka) or stream (JetStream).
const Topic = peer.Topic

// Kafka drives a Kafka-protocol server with franz-go from this process
// (bench/load): mini-kafka's broker and kfake get the very same client.
//
// acks=all runs the idempotent producer (Kafka's default since 3.0: up to
// five produce requests in flight per broker); acks=1 cannot be
// idempotent, so it runs the plain producer with the same five requests in
// flight. Records are unkeyed (sticky partitioner), uncompressed.
type Kafka struct {
	// DeliveryTimeout fails a record not acknowledged in this long.
	DeliveryTimeout time.Duration
	// Idle ends a read that sees nothing for this long.
	Idle time.Duration
}

var _ Driver = Kafka{}

func (k Kafka) client(s *Server, extra ...kgo.Opt) load.Client {
	return load.Client{Brokers: []string{s.Addr()}, Opts: extra}
}

// Prepare creates the topic.
func (k Kafka) Prepare(ctx context.Context, s *Server, partitions int32) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return load.EnsureTopic(ctx, k.client(s), Topic, partitions)
}

func (k Kafka) produceConfig(s *Server, spec Spec, hooks ...kgo.Hook) load.ProduceConfig {
	opts := []kgo.Opt{
		kgo.WithHooks(hooks...),
		// A phase that ends (a dead server, the run cancelled) fails what
		// is in flight instead of waiting out the delivery timeout.
		kgo.AllowIdempotentProduceCancellation(),
	}
	if spec.Acks != "all" {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	cfg := load.ProduceConfig{
		Client: k.client(s, opts...), Topic: Topic,
		Records: spec.Records(), Duration: spec.Duration, RecordBytes: spec.RecordBytes,
		Acks: spec.Acks, Idempotent: spec.Acks == "all", InFlight: spec.PerClient(), Clients: spec.Clients(),
		DeliveryTimeout: k.DeliveryTimeout, Seed: 1,
	}
	if spec.Progress != nil {
		cfg.Progress = func(acked int64) { spec.Progress(acked * int64(spec.RecordBytes)) }
	}
	return cfg
}

// Produce runs the closed-loop producer.
func (k Kafka) Produce(ctx context.Context, s *Server, spec Spec) (Produced, error) {
	if !spec.TrackAcked {
		res, err := load.Produce(ctx, k.produceConfig(s, spec))
		return Produced{ProduceResult: res}, err
	}
	hooks := &ackHooks{}
	res, err := load.Produce(ctx, k.produceConfig(s, spec, hooks))
	return Produced{ProduceResult: res, Acked: hooks.acked()}, err
}

// Tail produces while a consumer reads from the log end.
func (k Kafka) Tail(ctx context.Context, s *Server, spec Spec) (load.EndToEndResult, error) {
	p := k.produceConfig(s, spec)
	return load.EndToEnd(ctx, p, load.ConsumeConfig{Client: k.client(s), Idle: k.Idle})
}

// CatchUp reads records from the start.
func (k Kafka) CatchUp(ctx context.Context, s *Server, records int64) (load.ConsumeResult, error) {
	return load.Consume(ctx, load.ConsumeConfig{Client: k.client(s), Topic: Topic, Records: records, Idle: k.Idle})
}

// Records sums the partitions' end offsets (the log starts at 0).
func (k Kafka) Records(ctx context.Context, s *Server) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends, err := load.EndOffsets(ctx, k.client(s), Topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ends {
		n += e
	}
	return n, nil
}

// EndOffsets returns each partition's end offset.
func (k Kafka) EndOffsets(ctx context.Context, s *Server) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return load.EndOffsets(ctx, k.client(s), Topic)
}

// FirstRecord fetches from offset 0 of partition 0 until a record comes
// back or ctx ends; it is how a restart is timed.
func (k Kafka) FirstRecord(ctx context.Context, s *Server) error {
	opts := []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{Topic: {0: kgo.NewOffset().At(0)}}),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(s.Addr()))...)
	if err != nil {
		return fmt.Errorf("first fetch: %w", err)
	}
	defer cl.Close()
	for {
		fs := cl.PollRecords(ctx, 1)
		if len(fs.Records()) > 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("first fetch: %w", context.Cause(ctx))
		}
	}
}

// ackHooks tracks, per partition, the highest acknowledged offset (a
// lock per record: only for the phases that need it).
type ackHooks struct {
	mu   sync.Mutex
	high map[int32]int64
}

var _ kgo.HookProduceRecordUnbuffered = (*ackHooks)(nil)

func (h *ackHooks) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil {
		return
	}
	h.mu.Lock()
	if h.high == nil {
		h.high = map[int32]int64{}
	}
	if end := r.Offset + 1; end > h.high[r.Partition] {
		h.high[r.Partition] = end
	}
	h.mu.Unlock()
}

func (h *ackHooks) acked() map[int32]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int32]int64, len(h.high))
	for p, o := range h.high {
		out[p] = o
	}
	return out
}
