package runner

import (
	"context"
	"fmt"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/workloads"
)

// steps runs one repetition's steps and collects their figures.
type steps struct {
	cfg     *Config
	d       load.Driver
	srv     string
	figures map[string]float64
	// produced counts the records acknowledged so far: what a consume
	// step reads.
	produced int64
}

func (st *steps) run(ctx context.Context, s workloads.Step) error {
	switch {
	case s.Produce != nil:
		return st.produce(ctx, s.Prefix(), s.Produce)
	case s.Consume != nil:
		return st.consume(ctx, s.Prefix())
	}
	return fmt.Errorf("step of no kind")
}

func (st *steps) set(prefix string, figures map[string]float64) {
	for k, v := range figures {
		st.figures[prefix+"."+k] = v
	}
}

func (st *steps) produce(ctx context.Context, prefix string, p *workloads.Produce) error {
	progress, finish := st.cfg.Bar(st.srv+" "+prefix, p.Records)
	r, err := st.d.Produce(ctx, load.ProduceConfig{
		Topic: Topic, Records: p.Records, Duration: p.Duration, RecordBytes: p.RecordBytes,
		Acks: p.Acks, Idempotent: p.Idempotent, InFlight: p.InFlight, Rate: p.Rate, Clients: p.Clients,
		Progress: progress,
	})
	finish()
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d records failed: %s", r.Errors, r.Records+r.Errors, r.FirstError)
	}
	if err != nil {
		return err
	}
	st.produced += r.Records
	st.set(prefix, map[string]float64{
		"records": float64(r.Records), "records_per_s": r.RecordsPerSec, "mb_per_s": r.MBPerSec,
		"ack_p50_s": r.Latency.P50.Seconds(), "ack_p99_s": r.Latency.P99.Seconds(), "ack_p999_s": r.Latency.P999.Seconds(),
	})
	return nil
}

func (st *steps) consume(ctx context.Context, prefix string) error {
	progress, finish := st.cfg.Bar(st.srv+" "+prefix, st.produced)
	r, err := st.d.Consume(ctx, load.ConsumeConfig{Topic: Topic, Records: st.produced, Progress: progress})
	finish()
	if err != nil {
		return err
	}
	st.set(prefix, map[string]float64{"records": float64(r.Records), "records_per_s": r.RecordsPerSec, "mb_per_s": r.MBPerSec})
	return nil
}
