// Package brokerbench measures mini-kafka's broker against franz-go's
// in-memory fake cluster (kfake, which never fsyncs: the protocol
// ceiling) with the same client load in one run, side by side, and the
// broker's peak memory while millions of records go through. It is the
// broker profile of cmd/bench, which writes results/broker.md and
// results/broker.json.
//
// Each repetition starts every server fresh on an empty directory, as a
// child process (bench/server), produces the records (acks=all,
// idempotent, closed loop), then consumes them all from the start with a
// new client. Repetitions interleave the servers, so a machine that slows
// down during the run slows every server alike.
package brokerbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/server"
)

// Config is one benchmark run.
type Config struct {
	// Targets are measured in this order in every repetition; exactly one
	// should be the Reference.
	Targets []Target
	// RSSTargets run once each with RSSRecords going through, reading the
	// server's peak RSS at the end.
	RSSTargets []Target

	Records     int64 // per throughput repetition
	RSSRecords  int64
	RecordBytes int
	Partitions  int32
	Reps        int
	// InFlight is the producer's closed-loop bound (franz-go's buffered
	// records).
	InFlight int
	// Sync is the servers' sync policy (the broker's -sync).
	Sync string

	// Command is the command line that started the run, for the report.
	Command string
	// Setup lines describe how the servers were started (flags, binaries).
	Setup []string

	// Dir holds the servers' data directories, one fresh per start.
	Dir string
	// Log gets progress lines; nil discards them.
	Log io.Writer
	// Bar, when set, makes a progress bar for a phase of total records.
	Bar bench.Bar
}

// Target is a server kind the benchmark measures, started fresh for each
// repetition on an empty data directory.
type Target struct {
	// Name labels the target in the report: "kfake", "segment", ...
	Name string
	// Reference marks the target the others are compared with (kfake).
	Reference bool
	Start     server.Start
}

// Defaults are the committed run's workload.
const (
	DefaultRecords     = 1_000_000
	DefaultRSSRecords  = 5_000_000
	DefaultRecordBytes = 100
	DefaultPartitions  = 8
	DefaultReps        = 3
)

// The targets, checked against the reference in the same run.
const (
	TargetProduceRatio = 0.8 // segment produce / kfake produce
	TargetConsumeRatio = 1.0 // segment consume / kfake consume
	TargetRSSBytes     = 256 << 20
	// TargetEngine is the engine the targets apply to.
	TargetEngine = "segment"
)

// Workloads of a cell.
const (
	// Throughput is Config.Records produced then consumed, every
	// repetition.
	Throughput = "throughput"
	// Memory is Config.RSSRecords through the server once, for its peak
	// RSS.
	Memory = "memory"
)

// Rep is one start-produce-consume-stop of one target. A failed
// repetition has Error set and no figures.
type Rep struct {
	Produce float64 `json:"produce_records_per_s"`
	Consume float64 `json:"consume_records_per_s"`
	AckP50  float64 `json:"ack_p50_s"`
	AckP99  float64 `json:"ack_p99_s"`
	// PeakRSS is 0 when it could not be measured.
	PeakRSS int64  `json:"peak_rss_bytes"`
	Error   string `json:"error,omitempty"`
}

// Failure implements bench.Rep.
func (r Rep) Failure() string { return r.Error }

// Figures of a repetition; NaN for a failed one or a figure not measured.
var (
	ProduceRate = bench.Figure(func(r Rep) float64 { return r.Produce })
	ConsumeRate = bench.Figure(func(r Rep) float64 { return r.Consume })
	AckP50      = bench.Figure(func(r Rep) float64 { return r.AckP50 })
	AckP99      = bench.Figure(func(r Rep) float64 { return r.AckP99 })
	PeakRSS     = bench.Figure(func(r Rep) float64 { return float64(r.PeakRSS) })
)

// Cell is one target under one workload.
type Cell struct {
	bench.Cell[Rep]
	Records   int64 `json:"records"`
	Reference bool  `json:"reference"`
}

// Result is everything a run measured.
type Result struct {
	bench.Facts
	Config struct {
		Records     int64  `json:"records"`
		RSSRecords  int64  `json:"rss_records"`
		RecordBytes int    `json:"record_bytes"`
		Partitions  int32  `json:"partitions"`
		Reps        int    `json:"reps"`
		InFlight    int    `json:"in_flight"`
		Sync        string `json:"sync"`
	} `json:"config"`
	Cells []*Cell `json:"cells"`
	// Checks are the targets judged on the run (see Result.Judge).
	Checks []bench.Check `json:"checks"`
}

func (c *Config) defaults() {
	bench.Default(&c.Records, DefaultRecords)
	bench.Default(&c.RSSRecords, DefaultRSSRecords)
	bench.Default(&c.RecordBytes, DefaultRecordBytes)
	bench.Default(&c.Partitions, DefaultPartitions)
	bench.Default(&c.Reps, DefaultReps)
	bench.Default(&c.InFlight, load.DefaultInFlight)
	c.Sync = cmp.Or(c.Sync, server.DefaultSync)
	c.Log = cmp.Or(c.Log, io.Discard)
	if c.Bar == nil {
		c.Bar = bench.NoBar
	}
}

// Run measures every target Reps times and the RSS targets once. A target
// that fails in a repetition is recorded as failed there and the run goes
// on; the error return is for a run that could not start or was
// interrupted (the result then holds what finished).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	if len(cfg.Targets) == 0 && len(cfg.RSSTargets) == 0 {
		return nil, fmt.Errorf("brokerbench: no targets")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("brokerbench: %w", err)
	}
	res := &Result{Facts: bench.Begin(cfg.Dir, cfg.Command)}
	res.Setup = cfg.Setup
	res.Config.Records, res.Config.RSSRecords = cfg.Records, cfg.RSSRecords
	res.Config.RecordBytes, res.Config.Partitions = cfg.RecordBytes, cfg.Partitions
	res.Config.Reps, res.Config.InFlight, res.Config.Sync = cfg.Reps, cfg.InFlight, cfg.Sync
	for _, t := range cfg.Targets {
		res.Cells = append(res.Cells, &Cell{Cell: bench.Cell[Rep]{Target: t.Name, Workload: Throughput},
			Records: cfg.Records, Reference: t.Reference})
	}
	err := measureAll(ctx, &cfg, res)
	res.End()
	res.Checks = res.Judge()
	return res, err
}

// measureAll fills the throughput cells, repetition by repetition, then
// adds a memory cell per RSS target.
func measureAll(ctx context.Context, cfg *Config, res *Result) error {
	for rep := range cfg.Reps {
		for i, t := range cfg.Targets {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(cfg.Log, "rep %d/%d %s: %d records\n", rep+1, cfg.Reps, t.Name, cfg.Records)
			r := measure(ctx, cfg, t, cfg.Records, fmt.Sprintf("%s-%d", t.Name, rep))
			res.Cells[i].Reps = append(res.Cells[i].Reps, r)
			fmt.Fprintf(cfg.Log, "  %s\n", summary(r))
		}
	}
	for _, t := range cfg.RSSTargets {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(cfg.Log, "memory %s: %d records\n", t.Name, cfg.RSSRecords)
		r := measure(ctx, cfg, t, cfg.RSSRecords, t.Name+"-rss")
		res.Cells = append(res.Cells, &Cell{Cell: bench.Cell[Rep]{Target: t.Name, Workload: Memory, Reps: []Rep{r}},
			Records: cfg.RSSRecords, Reference: t.Reference})
		fmt.Fprintf(cfg.Log, "  %s\n", summary(r))
	}
	return nil
}

func summary(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	return fmt.Sprintf("produce %s/s, consume %s/s, ack p99 %s, peak rss %s",
		bench.Rate(r.Produce), bench.Rate(r.Consume), bench.Millis(r.AckP99), bench.Bytes(r.PeakRSS))
}

// measure starts t on a fresh directory, produces records, consumes them
// from the start, reads the peak RSS and stops the server.
func measure(ctx context.Context, cfg *Config, t Target, records int64, dirName string) (r Rep) {
	fail := func(err error) Rep { return Rep{Error: err.Error()} }
	dir := filepath.Join(cfg.Dir, dirName)
	if err := os.RemoveAll(dir); err != nil {
		return fail(fmt.Errorf("clean %s: %w", dir, err))
	}
	srv, err := t.Start(ctx, dir, cfg.Sync)
	if err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	defer func() {
		if err := srv.Stop(); err != nil && r.Error == "" {
			r = fail(fmt.Errorf("stop: %w", err))
		}
		// The data is not needed after the run; a full disk would fail the
		// next target.
		_ = os.RemoveAll(dir)
	}()
	client := load.Client{Brokers: []string{srv.Addr()}}
	const topic = "bench"
	if err := load.EnsureTopic(ctx, client, topic, cfg.Partitions); err != nil {
		return fail(err)
	}
	progress, finish := cfg.Bar(t.Name+" produce", records)
	p, err := load.Produce(ctx, load.ProduceConfig{
		Client: client, Topic: topic, Records: records, RecordBytes: cfg.RecordBytes,
		Acks: "all", Idempotent: true, InFlight: cfg.InFlight, Progress: progress,
	})
	finish()
	if err == nil && p.Errors > 0 {
		err = fmt.Errorf("produce: %d of %d records failed: %s", p.Errors, records, p.FirstError)
	}
	if err != nil {
		return fail(err)
	}
	progress, finish = cfg.Bar(t.Name+" consume", p.Records)
	c, err := load.Consume(ctx, load.ConsumeConfig{Client: client, Topic: topic, Records: p.Records, Progress: progress})
	finish()
	if err != nil {
		return fail(fmt.Errorf("consume: %w", err))
	}
	r = Rep{Produce: p.RecordsPerSec, Consume: c.RecordsPerSec, AckP50: p.Latency.P50.Seconds(), AckP99: p.Latency.P99.Seconds()}
	if rss, err := srv.PeakRSS(); err == nil {
		r.PeakRSS = rss
	}
	return r
}
