package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/peer"
)

// loadConfig is one nats-load phase.
type loadConfig struct {
	addr        string
	mode        string
	stream      string
	recordBytes int
	inFlight    int
	duration    time.Duration
	maxRecords  int64
	records     int64
	idle        time.Duration
}

func natsLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c loadConfig
	fs := flag.NewFlagSet("nats-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "", "server host:port")
	fs.StringVar(&c.mode, "mode", "", "create|produce|tail|catchup|count")
	fs.StringVar(&c.stream, "stream", peer.Topic, "stream name (subjects STREAM.>)")
	fs.IntVar(&c.recordBytes, "record-size", 1024, "message payload bytes")
	fs.IntVar(&c.inFlight, "in-flight", 256, "async publishes awaiting their acknowledgement")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "produce for this long")
	fs.Int64Var(&c.maxRecords, "max-records", 0, "stop producing after this many (0: no cap)")
	fs.Int64Var(&c.records, "records", 0, "catchup: messages to read")
	fs.DurationVar(&c.idle, "idle", 10*time.Second, "a read that sees nothing this long fails")
	if err := fs.Parse(args); err != nil {
		return err
	}
	producing := c.mode == peer.Produce || c.mode == peer.Tail
	if c.addr == "" || (producing && (c.recordBytes < load.StampBytes || c.inFlight < 1)) {
		return fmt.Errorf("nats-load: want -addr, and to produce -record-size ≥ %d and -in-flight ≥ 1", load.StampBytes)
	}
	c.inFlight = max(c.inFlight, 1)
	nc, err := nats.Connect("nats://"+c.addr, nats.Timeout(10*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return fmt.Errorf("connect %s: %w", c.addr, err)
	}
	defer nc.Close()
	out, err := c.phase(ctx, nc)
	if jerr := json.NewEncoder(stdout).Encode(out); jerr != nil && err == nil {
		err = jerr
	}
	return err
}

func (c *loadConfig) phase(ctx context.Context, nc *nats.Conn) (peer.Output, error) {
	var out peer.Output
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(c.inFlight),
		jetstream.WithPublishAsyncTimeout(deliveryTimeout))
	if err != nil {
		return out, fmt.Errorf("jetstream: %w", err)
	}
	switch c.mode {
	case peer.Create:
		_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: c.stream, Subjects: []string{c.stream + ".>"}, Storage: jetstream.FileStorage, Replicas: 1,
		})
	case peer.Produce:
		var p load.ProduceResult
		p, err = c.produce(ctx, js)
		out.Produce = &p
	case peer.Tail:
		var r load.EndToEndResult
		r, err = c.tail(ctx, js)
		out.Produce, out.Consume = &r.Produce, &r.Consume
	case peer.CatchUp:
		var r load.ConsumeResult
		r, err = c.consume(ctx, js, jetstream.DeliverAllPolicy, c.records, nil)
		out.Consume = &r
	case peer.Count:
		out.Records, err = c.count(ctx, js)
	default:
		err = fmt.Errorf("-mode %q: want create, produce, tail, catchup or count", c.mode)
	}
	return out, err
}

func (c *loadConfig) count(ctx context.Context, js jetstream.JetStream) (int64, error) {
	s, err := js.Stream(ctx, c.stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", c.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s info: %w", c.stream, err)
	}
	return int64(info.State.Msgs), nil
}

// tail starts a consumer at the stream's end, produces, and stops the
// consumer once it has every acknowledged message (or idles).
func (c *loadConfig) tail(ctx context.Context, js jetstream.JetStream) (load.EndToEndResult, error) {
	var r load.EndToEndResult
	target := make(chan int64, 1)
	type consumed struct {
		res load.ConsumeResult
		err error
	}
	done := make(chan consumed, 1)
	ready := make(chan error, 1)
	go func() {
		res, err := c.consume(ctx, js, jetstream.DeliverNewPolicy, 0, &tailControl{target: target, ready: ready})
		done <- consumed{res, err}
	}()
	if err := <-ready; err != nil {
		return r, err
	}
	var err error
	r.Produce, err = c.produce(ctx, js)
	target <- r.Produce.Records
	got := <-done
	r.Consume = got.res
	return r, errors.Join(err, got.err)
}

// newPayload is bench/load's payload pool, so both loads send the same
// incompressible bytes.
func newPayload(recordBytes int) *bench.Payload {
	return bench.NewPayload(1, max(1<<20, 4*recordBytes))
}
