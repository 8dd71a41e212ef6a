package reassign

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pump is a closed-loop acks=all idempotent producer: it keeps
// maxBuffered records in flight and no more, so its acknowledgement rate
// is what the cluster sustains; it keeps every acknowledgement's time.
type pump struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	value  []byte

	mu    sync.Mutex
	acks  []time.Time // in the order the callbacks ran
	bytes int64
	first error
	once  sync.Once
}

const maxBuffered = 4096

func startPump(ctx context.Context, seeds []string, recordBytes int) (*pump, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(maxBuffered), kgo.RecordRetries(1<<30), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("reassign: producer: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &pump{cl: cl, cancel: cancel, done: make(chan struct{}), value: make([]byte, recordBytes)}
	go p.run(ctx)
	return p, nil
}

func (p *pump) run(ctx context.Context) {
	defer close(p.done)
	for ctx.Err() == nil {
		// Produce blocks while maxBuffered records are in flight.
		p.cl.Produce(ctx, &kgo.Record{Value: p.value}, p.acked)
	}
}

func (p *pump) acked(r *kgo.Record, err error) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.first == nil && r.Context.Err() == nil {
			p.first = err
		}
		return
	}
	p.acks = append(p.acks, now)
	p.bytes += int64(len(r.Value))
}

func (p *pump) ackedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

func (p *pump) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

// rate is the acknowledgements per second in [from, to).
func (p *pump) rate(from, to time.Time) float64 {
	p.mu.Lock()
	acks := append([]time.Time(nil), p.acks...)
	p.mu.Unlock()
	// Callbacks run in order per partition, not across them: sort first.
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	lo := sort.Search(len(acks), func(i int) bool { return !acks[i].Before(from) })
	hi := sort.Search(len(acks), func(i int) bool { return !acks[i].Before(to) })
	return float64(hi-lo) / to.Sub(from).Seconds()
}

// stop ends the producer; records in flight are abandoned.
func (p *pump) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cl.Close()
	})
}
