// Package broker is the broker benchmark of issue 3: the same franz-go load
// against mini-kafka's broker over each durable engine and against franz-go's
// in-memory fake cluster (kfake, which never fsyncs) in one run, side by
// side, and the broker's peak memory while millions of records go through.
// It writes results/broker.md and results/broker.json.
//
// Each repetition starts every server fresh on an empty directory, produces
// the records (acks=all, idempotent, closed loop), then consumes them all
// from the start with a new client. Repetitions interleave the servers, so a
// machine that slows down during the run slows every server alike.
package broker

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
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

	// Command is the command line that started the run, for the report.
	Command string
	// Setup lines describe how the servers were started (flags, binaries).
	Setup []string

	// Dir holds the servers' data directories, one fresh per start.
	Dir string
	// Log gets progress lines; nil discards them.
	Log io.Writer
	// Bar, when set, makes a progress callback for a phase of total records.
	Bar func(what string, total int64) (progress func(int64), finish func())
}

// Defaults are the workload.
const (
	DefaultRecords     = 1_000_000
	DefaultRSSRecords  = 5_000_000
	DefaultRecordBytes = 100
	DefaultPartitions  = 8
	DefaultReps        = 3
)

// Targets of the issue, checked against the reference in the same run.
const (
	TargetProduceRatio = 0.8 // segment produce / kfake produce
	TargetConsumeRatio = 1.0 // segment consume / kfake consume
	TargetRSSBytes     = 256 << 20
	// TargetEngine is the engine the targets apply to.
	TargetEngine = "segment"
)

// Cell is one target's figures over the repetitions.
type Cell struct {
	Target    string `json:"target"`
	Reference bool   `json:"reference"`
	Reps      []Rep  `json:"reps"`
}

// Rep is one repetition of one target. A failed repetition has Error set
// and no figures.
type Rep struct {
	Produce float64 `json:"produce_records_per_s"`
	Consume float64 `json:"consume_records_per_s"`
	AckP50  float64 `json:"ack_p50_s"`
	AckP99  float64 `json:"ack_p99_s"`
	// PeakRSS is 0 when it could not be measured (a server in this process).
	PeakRSS int64  `json:"peak_rss_bytes"`
	Error   string `json:"error,omitempty"`
}

// Spread of one figure over the successful repetitions (see bench.SpreadOf).
func (c *Cell) Spread(figure func(Rep) float64) bench.Spread {
	xs := make([]float64, 0, len(c.Reps))
	for _, r := range c.Reps {
		v := figure(r)
		if r.Error != "" || v <= 0 {
			v = math.NaN()
		}
		xs = append(xs, v)
	}
	return bench.SpreadOf(xs)
}

// Errors lists the failed repetitions' errors.
func (c *Cell) Errors() []string {
	var out []string
	for i, r := range c.Reps {
		if r.Error != "" {
			out = append(out, fmt.Sprintf("rep %d: %s", i+1, r.Error))
		}
	}
	return out
}

// RSSCell is a target's memory run.
type RSSCell struct {
	Target  string  `json:"target"`
	Records int64   `json:"records"`
	PeakRSS int64   `json:"peak_rss_bytes"`
	Produce float64 `json:"produce_records_per_s"`
	Consume float64 `json:"consume_records_per_s"`
	Error   string  `json:"error,omitempty"`
}

// Result is everything a run measured.
type Result struct {
	Started  time.Time         `json:"started"`
	Duration float64           `json:"duration_s"`
	Machine  bench.MachineInfo `json:"machine"`
	Commit   string            `json:"commit"`
	Command  string            `json:"command"`
	Setup    []string          `json:"setup"`
	Config   struct {
		Records     int64 `json:"records"`
		RSSRecords  int64 `json:"rss_records"`
		RecordBytes int   `json:"record_bytes"`
		Partitions  int32 `json:"partitions"`
		Reps        int   `json:"reps"`
		InFlight    int   `json:"in_flight"`
	} `json:"config"`
	Cells []*Cell    `json:"cells"`
	RSS   []*RSSCell `json:"rss"`
}

func (c *Config) defaults() {
	if c.Records <= 0 {
		c.Records = DefaultRecords
	}
	if c.RSSRecords <= 0 {
		c.RSSRecords = DefaultRSSRecords
	}
	if c.RecordBytes <= 0 {
		c.RecordBytes = DefaultRecordBytes
	}
	if c.Partitions <= 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Reps <= 0 {
		c.Reps = DefaultReps
	}
	if c.InFlight <= 0 {
		c.InFlight = load.DefaultInFlight
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Bar == nil {
		c.Bar = func(string, int64) (func(int64), func()) { return nil, func() {} }
	}
}

// Run measures every target Reps times and the RSS targets once. A target
// that fails in a repetition is recorded as failed there and the run goes
// on; the error return is for a run that could not start.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	if len(cfg.Targets) == 0 && len(cfg.RSSTargets) == 0 {
		return nil, fmt.Errorf("bench/broker: no targets")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench/broker: %w", err)
	}
	res := &Result{Started: time.Now(), Machine: bench.Machine(cfg.Dir),
		Commit: bench.GitCommit("."), Command: cfg.Command, Setup: cfg.Setup}
	res.Config.Records, res.Config.RSSRecords = cfg.Records, cfg.RSSRecords
	res.Config.RecordBytes, res.Config.Partitions = cfg.RecordBytes, cfg.Partitions
	res.Config.Reps, res.Config.InFlight = cfg.Reps, cfg.InFlight
	for _, t := range cfg.Targets {
		res.Cells = append(res.Cells, &Cell{Target: t.Name, Reference: t.Reference})
	}
	for rep := range cfg.Reps {
		for i, t := range cfg.Targets {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			fmt.Fprintf(cfg.Log, "rep %d/%d %s: %d records\n", rep+1, cfg.Reps, t.Name, cfg.Records)
			m := measure(ctx, &cfg, t, cfg.Records, fmt.Sprintf("%s-%d", t.Name, rep))
			res.Cells[i].add(m)
			fmt.Fprintf(cfg.Log, "  %s\n", m)
		}
	}
	for _, t := range cfg.RSSTargets {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		fmt.Fprintf(cfg.Log, "memory %s: %d records\n", t.Name, cfg.RSSRecords)
		m := measure(ctx, &cfg, t, cfg.RSSRecords, t.Name+"-rss")
		res.RSS = append(res.RSS, m.rssCell(t.Name, cfg.RSSRecords))
		fmt.Fprintf(cfg.Log, "  %s\n", m)
	}
	res.Duration = time.Since(res.Started).Seconds()
	return res, nil
}

// measurement is one start-produce-consume-stop of one target.
type measurement struct {
	produce load.ProduceResult
	consume load.ConsumeResult
	rss     int64 // 0 when unknown
	err     error
}

func (m measurement) String() string {
	if m.err != nil {
		return "FAILED: " + m.err.Error()
	}
	return fmt.Sprintf("produce %s/s, consume %s/s, ack p99 %v, peak rss %s",
		bench.Rate(m.produce.RecordsPerSec), bench.Rate(m.consume.RecordsPerSec),
		m.produce.Latency.P99.Round(time.Microsecond), bench.Bytes(m.rss))
}

func (c *Cell) add(m measurement) {
	if m.err != nil {
		c.Reps = append(c.Reps, Rep{Error: m.err.Error()})
		return
	}
	c.Reps = append(c.Reps, Rep{
		Produce: m.produce.RecordsPerSec,
		Consume: m.consume.RecordsPerSec,
		AckP50:  m.produce.Latency.P50.Seconds(),
		AckP99:  m.produce.Latency.P99.Seconds(),
		PeakRSS: m.rss,
	})
}

func (m measurement) rssCell(name string, records int64) *RSSCell {
	c := &RSSCell{Target: name, Records: records, PeakRSS: m.rss,
		Produce: m.produce.RecordsPerSec, Consume: m.consume.RecordsPerSec}
	if m.err != nil {
		c.Error = m.err.Error()
	}
	return c
}

// measure starts t on a fresh directory, produces records, consumes them
// from the start, reads the peak RSS and stops the server.
func measure(ctx context.Context, cfg *Config, t Target, records int64, dirName string) (m measurement) {
	dir := filepath.Join(cfg.Dir, dirName)
	if err := os.RemoveAll(dir); err != nil {
		return measurement{err: fmt.Errorf("clean %s: %w", dir, err)}
	}
	srv, err := t.Start(ctx, dir)
	if err != nil {
		return measurement{err: fmt.Errorf("start: %w", err)}
	}
	defer func() {
		if err := srv.Stop(); err != nil && m.err == nil {
			m.err = fmt.Errorf("stop: %w", err)
		}
		// The data is not needed after the run; a full disk would fail the
		// next target.
		_ = os.RemoveAll(dir)
	}()
	client := load.Client{Brokers: []string{srv.Addr()}}
	const topic = "bench"
	if err := load.EnsureTopic(ctx, client, topic, cfg.Partitions); err != nil {
		return measurement{err: err}
	}
	progress, finish := cfg.Bar(t.Name+" produce", records)
	m.produce, err = load.Produce(ctx, load.ProduceConfig{
		Client: client, Topic: topic, Records: records, RecordBytes: cfg.RecordBytes,
		Acks: "all", Idempotent: true, InFlight: cfg.InFlight, Progress: progress,
	})
	finish()
	if err == nil && m.produce.Errors > 0 {
		err = fmt.Errorf("produce: %d of %d records failed: %s", m.produce.Errors, records, m.produce.FirstError)
	}
	if err != nil {
		return measurement{err: err}
	}
	progress, finish = cfg.Bar(t.Name+" consume", m.produce.Records)
	m.consume, err = load.Consume(ctx, load.ConsumeConfig{
		Client: client, Topic: topic, Records: m.produce.Records, Progress: progress,
	})
	finish()
	if err != nil {
		return measurement{err: fmt.Errorf("consume: %w", err)}
	}
	if rss, err := srv.PeakRSS(); err == nil {
		m.rss = rss
	}
	return m
}
