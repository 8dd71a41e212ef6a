package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// deliveryTimeout fails a publish whose acknowledgement has not come in
// this long (bench/load's producers use the same bound in the matrix).
const deliveryTimeout = 15 * time.Second

// sent is a publish awaiting its acknowledgement.
type sent struct {
	f  jetstream.PubAckFuture
	at time.Time
	n  int
}

// produce publishes asynchronously, at most inFlight awaiting their
// acknowledgement (the client stalls the publisher beyond that), for the
// duration or maxRecords. Latency is from the publish call to its
// acknowledgement, as bench/load measures it from the Produce call.
func (c *loadConfig) produce(ctx context.Context, js jetstream.JetStream) (load.ProduceResult, error) {
	payload := newPayload(c.recordBytes)
	lat := bench.NewLatency()
	var res load.ProduceResult
	pending := make(chan sent, c.inFlight+1)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for s := range pending {
			select {
			case <-s.f.Ok():
				lat.Record(time.Since(s.at))
				res.Records++
				res.Bytes += int64(s.n)
			case err := <-s.f.Err():
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
			}
		}
	}()
	loopCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	subject := c.stream + ".0"
	var pubErrs int64
	var firstPubErr error
	start := time.Now()
	for i := int64(0); c.maxRecords == 0 || i < c.maxRecords; i++ {
		if loopCtx.Err() != nil {
			break
		}
		v := make([]byte, c.recordBytes)
		payload.Fill(i, v)
		at := time.Now()
		load.Stamp(v, at)
		f, err := js.PublishAsync(subject, v, jetstream.WithStallWait(deliveryTimeout))
		if err != nil {
			pubErrs++
			if firstPubErr == nil {
				firstPubErr = err
			}
			continue
		}
		pending <- sent{f: f, at: at, n: len(v)}
	}
	close(pending)
	<-collected
	elapsed := time.Since(start)
	res.Errors += pubErrs
	if res.FirstError == "" && firstPubErr != nil {
		res.FirstError = firstPubErr.Error()
	}
	res.Elapsed = elapsed.Seconds()
	res.RecordsPerSec = load.Rate(res.Records, elapsed)
	res.MBPerSec = load.Rate(res.Bytes, elapsed) / 1e6
	res.Latency = lat.Summary()
	return res, nil
}

// tailControl lets tail tell its consumer when it is subscribed and, once
// the producer is done, how many messages to expect.
type tailControl struct {
	ready  chan error
	target chan int64
}

// counter is what the consumer's callback updates.
type counter struct {
	records atomic.Int64
	bytes   atomic.Int64
	last    atomic.Int64 // unix nanoseconds of the last message
	e2e     *bench.Latency
}

// consume reads with an ordered consumer (the client's fastest in-order
// read: no acknowledgements) from where policy says, until want messages
// arrived (tail: the count tc delivers), or nothing arrives for idle.
func (c *loadConfig) consume(ctx context.Context, js jetstream.JetStream, policy jetstream.DeliverPolicy, want int64, tc *tailControl) (load.ConsumeResult, error) {
	ready := func(err error) {
		if tc != nil {
			tc.ready <- err
		}
	}
	cons, err := js.OrderedConsumer(ctx, c.stream, jetstream.OrderedConsumerConfig{DeliverPolicy: policy})
	if err != nil {
		ready(err)
		return load.ConsumeResult{}, fmt.Errorf("ordered consumer: %w", err)
	}
	cnt := &counter{e2e: bench.NewLatency()}
	start := time.Now()
	cnt.last.Store(start.UnixNano())
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now()
		data := m.Data()
		if t, ok := load.SentAt(data); ok {
			cnt.e2e.Record(now.Sub(t))
		}
		cnt.bytes.Add(int64(len(data)))
		cnt.records.Add(1)
		cnt.last.Store(now.UnixNano())
	}, jetstream.PullMaxMessages(1024))
	if err != nil {
		ready(err)
		return load.ConsumeResult{}, fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()
	ready(nil)
	if tc != nil {
		start = time.Now()
	}
	err = c.waitFor(ctx, cnt, want, tc)
	end := time.Unix(0, cnt.last.Load())
	res := load.ConsumeResult{Records: cnt.records.Load(), Bytes: cnt.bytes.Load(), EndToEnd: cnt.e2e.Summary()}
	elapsed := end.Sub(start)
	res.Elapsed = elapsed.Seconds()
	res.RecordsPerSec = load.Rate(res.Records, elapsed)
	res.MBPerSec = load.Rate(res.Bytes, elapsed) / 1e6
	return res, err
}

// waitFor polls the count until want is reached, idle passes without a
// message, or ctx ends.
func (c *loadConfig) waitFor(ctx context.Context, cnt *counter, want int64, tc *tailControl) error {
	if tc == nil && want == 0 {
		return nil
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if tc != nil && want == 0 {
			select {
			case want = <-tc.target:
				if want == 0 {
					return nil
				}
			default:
			}
		}
		if want > 0 && cnt.records.Load() >= want {
			return nil
		}
		if since := time.Since(time.Unix(0, cnt.last.Load())); since > c.idle {
			return fmt.Errorf("%w: nothing for %v after %d messages", load.ErrIdle, c.idle, cnt.records.Load())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
