package reassign

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pump is a closed-loop acks=all idempotent producer: it keeps
// maxBuffered records in flight and no more, so its acknowledgement rate
// is what the cluster sustains. It counts its acknowledgements in buckets
// of time rather than keeping each one's: at hundreds of thousands a
// second such a record grows by hundreds of MB a minute, and copying and
// collecting it pauses every producer of this process, the tracked one
// whose gaps the report measures too.
type pump struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	value  []byte

	mu    sync.Mutex
	acks  ackCounts
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
	p := &pump{cl: cl, cancel: cancel, done: make(chan struct{}), value: make([]byte, recordBytes), acks: ackCounts{start: time.Now()}}
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
	p.acks.add(now)
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

// rate is the acknowledgements per second in [from, to), to a bucket.
func (p *pump) rate(from, to time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acks.rate(from, to)
}

// ackBucket is the resolution of a pump's record of its acknowledgements.
const ackBucket = 10 * time.Millisecond

// ackCounts counts events in consecutive buckets of ackBucket from start.
type ackCounts struct {
	start  time.Time
	counts []int64
}

func (c *ackCounts) add(at time.Time) {
	i := max(int(at.Sub(c.start)/ackBucket), 0)
	for len(c.counts) <= i {
		c.counts = append(c.counts, 0)
	}
	c.counts[i]++
}

// rate is the events per second in the buckets that begin in [from, to).
func (c *ackCounts) rate(from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	lo := max(int((from.Sub(c.start)+ackBucket-1)/ackBucket), 0)
	hi := min(int((to.Sub(c.start)+ackBucket-1)/ackBucket), len(c.counts))
	var n int64
	for i := lo; i < hi; i++ {
		n += c.counts[i]
	}
	return float64(n) / to.Sub(from).Seconds()
}

// stop ends the producer; records in flight are abandoned.
func (p *pump) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cl.Close()
	})
}
