package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/progress"
)

// common are the flags of every workload command.
type common struct {
	brokers    string
	topic      string
	partitions int
	jsonOut    string
	progress   bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.brokers, "brokers", "localhost:9092", "comma-separated seed brokers")
	fs.StringVar(&c.topic, "topic", "loadgen", "topic")
	fs.IntVar(&c.partitions, "partitions", 8, "create the topic with this many partitions if it does not exist (0: do not create)")
	fs.StringVar(&c.jsonOut, "json", "", "also write the result as JSON to this file (- for stdout)")
	fs.BoolVar(&c.progress, "progress", progress.IsTerminal(os.Stderr), "show a progress bar on stderr")
}

func (c *common) client() (load.Client, error) {
	b := bench.SplitList(c.brokers)
	if len(b) == 0 {
		return load.Client{}, usageErr("-brokers is empty")
	}
	return load.Client{Brokers: b}, nil
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

// bar returns a progress callback drawing a bar of total records (or a
// spinner when total is unknown) and a finish func; both are no-ops when
// disabled.
func bar(enabled bool, w io.Writer, what string, total int64) (func(int64), func()) {
	if !enabled {
		return bench.NoBar(what, total)
	}
	return progress.NewBar(w, false)(what, total)
}

// writeJSON writes v to path ("-" is stdout).
func writeJSON(stdout io.Writer, path string, v any) error {
	if path == "" {
		return nil
	}
	if path == "-" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return bench.WriteJSON(path, v)
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
	parts := []string{
		"p50 " + s.P50.Round(time.Microsecond).String(),
		"p99 " + s.P99.Round(time.Microsecond).String(),
		"p99.9 " + s.P999.Round(time.Microsecond).String(),
		"max " + s.Max.Round(time.Microsecond).String(),
	}
	return strings.Join(parts, "  ")
}
