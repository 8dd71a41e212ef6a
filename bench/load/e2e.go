package load

import (
	"context"
	"fmt"
)

// EndToEndResult holds both sides of a run that produces and consumes at
// the same time.
type EndToEndResult struct {
	Produce ProduceResult `json:"produce"`
	Consume ConsumeResult `json:"consume"`
}

// EndToEnd produces p while a consumer reads the same topic from its current
// end, so the consumer sees exactly the records produced here and measures
// their end-to-end latency. The consumer stops once it has read every
// acknowledged record, or after c.Idle without one.
func EndToEnd(ctx context.Context, p ProduceConfig, c ConsumeConfig) (EndToEndResult, error) {
	if err := p.check(); err != nil {
		return EndToEndResult{}, err
	}
	if p.Acks == "0" {
		return EndToEndResult{}, configErr("end-to-end needs acknowledged records: acks 1 or all")
	}
	c.Topic = p.Topic
	if len(c.Brokers) == 0 {
		c.Client = p.Client
	}
	ends, err := EndOffsets(ctx, c.Client, p.Topic)
	if err != nil {
		return EndToEndResult{}, err
	}
	c.From = ends
	c.Records = 0
	c.Duration = 0

	// The consumer publishes its running count; once the producer is done
	// and the count reaches what was acknowledged, the consumer is stopped.
	counts := make(chan int64, 1)
	c.onRead = func(n int64) {
		select {
		case <-counts:
		default:
		}
		counts <- n
	}
	cctx, cancelConsumer := context.WithCancel(ctx)
	defer cancelConsumer()
	var res EndToEndResult
	var consErr error
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		res.Consume, consErr = Consume(cctx, c)
	}()
	res.Produce, err = Produce(ctx, p)
	if err != nil {
		cancelConsumer()
		<-consDone
		return res, err
	}
	for read := int64(0); read < res.Produce.Records; {
		select {
		case read = <-counts:
			continue
		case <-consDone:
		}
		break
	}
	cancelConsumer()
	<-consDone
	if consErr != nil {
		return res, fmt.Errorf("load: end-to-end consumer: %w", consErr)
	}
	return res, nil
}
