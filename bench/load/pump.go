package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Pump is a closed-loop acks=all producer in the background: it keeps
// InFlight records in flight and no more, so its acknowledgement rate is
// what the servers sustain, and a caller reads that rate over any span
// while it runs (Rate). It counts its acknowledgements in buckets
// of time rather than keeping each one's: at hundreds of thousands a
// second such a record grows by hundreds of MB a minute, and copying and
// collecting it pauses every producer of this process, the tracked one
// whose gaps the report measures too.
type Pump struct {
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

// StartPump starts a Pump of records of recordBytes to topic, round
// robin over its partitions, idempotent, retried without limit (a fault
// delays records, it does not fail them); Stop ends it.
func StartPump(ctx context.Context, c Client, topic string, recordBytes, inFlight int) (*Pump, error) {
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(inFlight), kgo.RecordRetries(1<<30), kgo.MetadataMinAge(50*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("load: pump: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Pump{cl: cl, cancel: cancel, done: make(chan struct{}), value: make([]byte, recordBytes), acks: ackCounts{start: time.Now()}}
	go p.run(ctx)
	return p, nil
}

func (p *Pump) run(ctx context.Context) {
	defer close(p.done)
	for ctx.Err() == nil {
		// Produce blocks while InFlight records are in flight.
		p.cl.Produce(ctx, &kgo.Record{Value: p.value}, p.acked)
	}
}

func (p *Pump) acked(r *kgo.Record, err error) {
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

// AckedBytes is the value bytes acknowledged so far.
func (p *Pump) AckedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// Err is the first failure of a record, nil while there is none.
func (p *Pump) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

// Rate is the acknowledgements per second in [from, to), to a bucket.
func (p *Pump) Rate(from, to time.Time) float64 {
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

// Stop ends the producer; records in flight are abandoned.
func (p *Pump) Stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cl.Close()
	})
}
