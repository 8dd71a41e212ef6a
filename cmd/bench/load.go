package main

// The load commands (formerly cmd/loadgen) drive mini-kafka, or any
// Kafka-compatible broker, with the benchmark's franz-go driver
// (bench/load) and report throughput and latency (HdrHistogram
// percentiles) as text and JSON:
//
//	go run ./cmd/bench produce -brokers B -topic T -records N [-record-size 100] [-rate R] ...
//	go run ./cmd/bench consume -brokers B -topic T -records N
//	go run ./cmd/bench e2e     -brokers B -topic T -records N -rate R   (produce and consume together)
//
// Closed loop (the default) keeps -in-flight records outstanding per
// client; -rate switches to open loop, where latency counts from each
// record's intended send time, so a broker stall shows up in the
// percentiles instead of silently slowing the producer down.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/progress"
)

// loadCommand is one load command.
type loadCommand struct {
	summary string
	run     func(ctx context.Context, stdout, stderr io.Writer, args []string) error
}

var loadCommands = map[string]loadCommand{
	"produce": {"produce records, closed loop (-in-flight) or open loop (-rate); ack latency", runProduce},
	"consume": {"consume a topic from the start (-from start) or only new records (-from end)", runConsume},
	"e2e":     {"produce and consume at once: ack latency and end-to-end latency (produce to consume)", runE2E},
}

// common are the flags of every load command.
type common struct {
	brokers    string
	topic      string
	partitions int
	jsonOut    string
	progress   bool
}

// parse parses a load command's flags, the common ones and those add
// registers (it takes no positional arguments), and returns the client
// of -brokers.
func (c *common) parse(name string, stderr io.Writer, args []string, add func(fs *flag.FlagSet)) (load.Client, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.brokers, "brokers", "localhost:9092", "comma-separated seed brokers")
	fs.StringVar(&c.topic, "topic", "load", "topic")
	fs.IntVar(&c.partitions, "partitions", 8, "create the topic with this many partitions if it does not exist (0: do not create)")
	fs.StringVar(&c.jsonOut, "json", "", "also write the result as JSON to this file (- for stdout)")
	fs.BoolVar(&c.progress, "progress", progress.IsTerminal(os.Stderr), "show a progress bar on stderr")
	add(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return load.Client{}, err
		}
		return load.Client{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return load.Client{}, usageErr("unexpected arguments %q", fs.Args())
	}
	b := bench.SplitList(c.brokers)
	if len(b) == 0 {
		return load.Client{}, usageErr("-brokers is empty")
	}
	return load.Client{Brokers: b}, nil
}

// ensureTopic creates the topic unless -partitions is 0.
func (c *common) ensureTopic(ctx context.Context, cl load.Client) error {
	if c.partitions <= 0 {
		return nil
	}
	return load.EnsureTopic(ctx, cl, c.topic, int32(c.partitions))
}

// bar returns a progress callback drawing a bar of total records (or a
// spinner when total is unknown) and a finish func; both are no-ops
// without -progress.
func (c *common) bar(stderr io.Writer, what string, total int64) (func(int64), func()) {
	if !c.progress {
		return bench.NoBar(what, total)
	}
	return progress.NewBar(stderr, false)(what, total)
}

// writeJSON writes the command's config and result to -json ("-" is
// stdout).
func (c *common) writeJSON(stdout io.Writer, config, result any) error {
	v := struct {
		Config any `json:"config"`
		Result any `json:"result"`
	}{config, result}
	var err error
	switch c.jsonOut {
	case "":
		return nil
	case "-":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	default:
		err = bench.WriteJSON(c.jsonOut, v)
	}
	if err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// produceFlags fill a load.ProduceConfig.
func produceFlags(fs *flag.FlagSet, p *load.ProduceConfig) {
	fs.Int64Var(&p.Records, "records", 1_000_000, "records to produce (0: run for -duration)")
	fs.DurationVar(&p.Duration, "duration", 0, "stop producing after this long")
	fs.IntVar(&p.RecordBytes, "record-size", 100, "value bytes per record")
	fs.IntVar(&p.Keys, "keys", 0, "distinct keys, murmur2-partitioned (0: unkeyed)")
	fs.StringVar(&p.Acks, "acks", "all", "acks: all, 1 or 0")
	fs.BoolVar(&p.Idempotent, "idempotent", true, "idempotent producer (needs acks=all)")
	fs.StringVar(&p.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&p.InFlight, "in-flight", load.DefaultInFlight, "records outstanding per client (closed loop)")
	fs.Float64Var(&p.Rate, "rate", 0, "target records/s over all clients: open loop (0: closed loop)")
	fs.IntVar(&p.Clients, "clients", 1, "producer clients, each with its own connections")
	fs.DurationVar(&p.Linger, "linger", 0, "producer linger (0: franz-go's default of 10ms; negative: none)")
	fs.Uint64Var(&p.Seed, "seed", 1, "payload seed")
	fs.DurationVar(&p.DeliveryTimeout, "delivery-timeout", 30*time.Second, "fail a record not acknowledged in this long (at least 1s)")
}

func printProduce(w io.Writer, r load.ProduceResult) {
	fmt.Fprintf(w, "produce: %d records in %.2fs = %s records/s, %.1f MB/s; errors %d\n",
		r.Records, r.Elapsed, bench.Rate(r.RecordsPerSec), r.MBPerSec, r.Errors)
	fmt.Fprintf(w, "  ack latency  %s\n", latencyLine(r.Latency))
	if r.Behind > 0 {
		fmt.Fprintf(w, "  open loop fell behind its schedule by up to %v\n", r.Behind.Round(time.Microsecond))
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "  first error: %s\n", r.FirstError)
	}
}

// produceErr is the error of a produce whose records failed.
func produceErr(r load.ProduceResult) error {
	if r.Errors > 0 {
		return fmt.Errorf("%d records failed: %s", r.Errors, r.FirstError)
	}
	return nil
}

// printConsume prints a consumer's result; e2e says the records were
// produced during the run, so their age on arrival is end-to-end latency.
func printConsume(w io.Writer, r load.ConsumeResult, e2e bool) {
	fmt.Fprintf(w, "consume: %d records in %.2fs = %s records/s, %.1f MB/s\n",
		r.Records, r.Elapsed, bench.Rate(r.RecordsPerSec), r.MBPerSec)
	if e2e && r.EndToEnd.Count > 0 {
		fmt.Fprintf(w, "  end-to-end   %s\n", latencyLine(r.EndToEnd))
	}
}

func latencyLine(s bench.Summary) string {
	return fmt.Sprintf("p50 %v  p99 %v  p99.9 %v  max %v", s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond),
		s.P999.Round(time.Microsecond), s.Max.Round(time.Microsecond))
}

func runProduce(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var p load.ProduceConfig
	cl, err := c.parse("produce", stderr, args, func(fs *flag.FlagSet) { produceFlags(fs, &p) })
	if err != nil {
		return err
	}
	if err := c.ensureTopic(ctx, cl); err != nil {
		return err
	}
	p.Client, p.Topic = cl, c.topic
	var finish func()
	p.Progress, finish = c.bar(stderr, "produce", p.Records)
	res, err := load.Produce(ctx, p)
	finish()
	if err != nil {
		return err
	}
	printProduce(stdout, res)
	return cmp.Or(c.writeJSON(stdout, p, res), produceErr(res))
}

func int32Flag(dst *int32) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || v <= 0 {
			return fmt.Errorf("want a positive 32-bit integer, got %q", s)
		}
		*dst = int32(v)
		return nil
	}
}

func runConsume(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var cc load.ConsumeConfig
	var from string
	cl, err := c.parse("consume", stderr, args, func(fs *flag.FlagSet) {
		fs.Int64Var(&cc.Records, "records", 1_000_000, "stop after this many records (0: -duration or interrupt)")
		fs.DurationVar(&cc.Duration, "duration", 0, "stop after this long")
		fs.DurationVar(&cc.Idle, "idle", 0, "give up when no record arrives for this long (0: 30s)")
		fs.StringVar(&from, "from", "start", "where to begin: start or end")
		fs.Func("fetch-max-bytes", "fetch response limit (default: franz-go's)", int32Flag(&cc.FetchMaxBytes))
		fs.Func("fetch-max-partition-bytes", "per-partition fetch limit (default: franz-go's)", int32Flag(&cc.FetchMaxPartitionBytes))
	})
	if err != nil {
		return err
	}
	cc.Client, cc.Topic = cl, c.topic
	switch from {
	case "start":
	case "end":
		if cc.From, err = load.EndOffsets(ctx, cl, c.topic); err != nil {
			return err
		}
	default:
		return usageErr("-from %q: want start or end", from)
	}
	var finish func()
	cc.Progress, finish = c.bar(stderr, "consume", cc.Records)
	res, err := load.Consume(ctx, cc)
	finish()
	printConsume(stdout, res, from == "end")
	return cmp.Or(c.writeJSON(stdout, cc, res), err)
}

func runE2E(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var p load.ProduceConfig
	var cc load.ConsumeConfig
	cl, err := c.parse("e2e", stderr, args, func(fs *flag.FlagSet) {
		produceFlags(fs, &p)
		fs.DurationVar(&cc.Idle, "idle", 0, "give up when the consumer gets nothing for this long (0: 30s)")
	})
	if err != nil {
		return err
	}
	if p.RecordBytes < load.StampBytes {
		return usageErr("-record-size must be at least %d to carry the send time", load.StampBytes)
	}
	if err := c.ensureTopic(ctx, cl); err != nil {
		return err
	}
	p.Client, p.Topic = cl, c.topic
	cc.Client = cl
	var finish func()
	p.Progress, finish = c.bar(stderr, "e2e", p.Records)
	res, err := load.EndToEnd(ctx, p, cc)
	finish()
	printProduce(stdout, res.Produce)
	printConsume(stdout, res.Consume, true)
	return cmp.Or(c.writeJSON(stdout, p, res), err, produceErr(res.Produce))
}
