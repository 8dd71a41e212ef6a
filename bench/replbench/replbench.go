// Package replbench measures mini-kafka's ISR replication over each
// storage engine, the same replication on every one: a three-broker
// cluster (bench/harness.Cluster, every broker a controller voter, each a
// cmd/broker child process) with replication factor 3 and
// min.insync.replicas 2 against one broker at RF 1, under the same
// franz-go load in the same run; acks=all latency at half the peak rate;
// a kill -9 of a partition's leader under load until the first
// acknowledgement from the new leader, with every acknowledged record
// consumed exactly once at the end; a controlled shutdown (SIGTERM) of a
// leader under load and the longest stall of its partitions'
// acknowledgements; and a follower stopped while a backlog is produced,
// timed until it is back in every ISR, against the engine's bulk-ingest
// rate (package logbench) measured in the same run. It is the
// replication profile of cmd/bench, which writes results/replication.md
// and replication.json.
package replbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/broker/harness"
)

// Workloads of a cell.
const (
	ProduceRF1 = "produce-rf1"
	ProduceRF3 = "produce-rf3"
	LatencyRF3 = "latency-rf3"
	LatencyRF1 = "latency-rf1"
	// LatencyLower holds RF 3 open-loop runs at the peak divided by each
	// of LowerRateDivisors: where acks=all's tail stands below half the peak.
	LatencyLower = "latency-rf3-lower"
	KillLeader   = "kill-leader"
	StopLeader   = "stop-leader"
	// Audit is the consumption of everything the tracked producer was
	// told was acknowledged through the kills and stops.
	Audit    = "audit"
	CatchUp  = "catch-up"
	Ingest   = "ingest"
	MinISR   = 2
	Replicas = 3
)

// The targets.
const (
	TargetThroughputRatio = 0.6 // RF 3 produce / RF 1 produce
	TargetCPURatio        = 2.5 // CPU per record, RF 3 / RF 1
	// TargetFlushRatio bounds each other engine's device flushes per
	// acknowledged batch at RF 3 over segment's in the same run.
	TargetFlushRatio     = 1.0
	TargetHalfRateP99    = 10 * time.Millisecond
	TargetFailoverMedian = time.Second
	TargetFailoverMax    = 2 * time.Second
	TargetStall          = 200 * time.Millisecond
	TargetCatchUpRatio   = 0.5 // catch-up bytes/s / bulk ingest bytes/s
)

// Defaults of the committed run.
const (
	DefaultRecordBytes  = 1024
	DefaultPartitions   = 8
	DefaultRun          = 6 * time.Second
	DefaultReps         = 3
	DefaultKills        = 10
	DefaultStops        = 5
	DefaultFaultRate    = 2000
	DefaultCatchUpBytes = 1 << 30
	DefaultIngestReps   = 3
	// FaultPartitions is the partition count of the fault topic: one led
	// by each broker.
	FaultPartitions = 3
	// LatencyLinger is the producer's linger in the latency runs: Kafka's
	// linger.ms default since 4.0 (KIP-1030). franz-go's default, which the
	// throughput runs keep, is 10 ms, and a record waits out most of it at
	// a rate below what fills a batch sooner.
	LatencyLinger = 5 * time.Millisecond
	// LatencyWarmup is the start of a latency run left out of its figures:
	// the client's connections, metadata and producer id.
	LatencyWarmup = time.Second
)

// Config is one run of the replication profile.
type Config struct {
	Engines []string
	bench.Servers

	RecordBytes int
	Partitions  int32
	// Run is each throughput and latency run's length; Reps the pairs of
	// throughput runs (RF 1 then RF 3).
	Run  time.Duration
	Reps int
	// Kills and Stops are the kill -9 and SIGTERM rounds, under a tracked
	// producer at FaultRate records per second.
	Kills     int
	Stops     int
	FaultRate float64
	// CatchUpBytes are produced while a follower is down.
	CatchUpBytes int64
	// Ingest is the bulk ingest compared with the catch-up, IngestReps
	// times per engine.
	Ingest     logbench.Config
	IngestReps int
}

// Rep is one measurement; the fields its workload has are set.
type Rep struct {
	// Throughput and latency runs.
	RecordsPerSec float64 `json:"records_per_s,omitempty"`
	BytesPerSec   float64 `json:"bytes_per_s,omitempty"`
	Rate          float64 `json:"rate,omitempty"` // the open-loop target
	P50           float64 `json:"p50_s,omitempty"`
	P99           float64 `json:"p99_s,omitempty"`
	P999          float64 `json:"p999_s,omitempty"`
	Max           float64 `json:"max_s,omitempty"`
	// Behind is how far the open-loop schedule fell behind at worst.
	Behind float64 `json:"behind_s,omitempty"`
	Errors int64   `json:"errors,omitempty"`
	// Closed-loop throughput runs: the records and batches acknowledged,
	// the CPU seconds every broker process spent meanwhile, and the flush
	// requests the data's block device completed (what the engines' fsyncs
	// cost the disk, every broker's).
	Records    int64   `json:"records,omitempty"`
	Batches    int64   `json:"batches,omitempty"`
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	Flushes    int64   `json:"flushes,omitempty"`

	// Faults: Seconds is the figure (kill: to the first acknowledgement
	// from the new leader; stop: the longest gap between two
	// acknowledgements of one partition; catch-up: start to back in every
	// ISR; ingest: the ingest's time). Node is the broker killed or
	// stopped, Controller whether it was the active controller then,
	// Leader the partition's next leader.
	Seconds    float64 `json:"seconds,omitempty"`
	Node       int32   `json:"node,omitempty"`
	Controller bool    `json:"controller,omitempty"`
	Leader     int32   `json:"leader,omitempty"`
	// Shutdown is SIGTERM to exit; Quiet the longest gap in a window
	// without a fault before the first kill (stop, kill).
	Shutdown float64 `json:"shutdown_s,omitempty"`
	Quiet    float64 `json:"quiet_s,omitempty"`
	// Timeline counts the records acknowledged on the killed leader's
	// partition per TimelineBin, from TimelineFrom before the kill (the
	// first kill of each engine).
	Timeline []int `json:"timeline,omitempty"`

	// Audit.
	Acked      int   `json:"acked,omitempty"`
	Consumed   int64 `json:"consumed,omitempty"`
	Lost       int   `json:"lost"`
	Duplicated int   `json:"duplicated"`
	Misplaced  int   `json:"misplaced"`
	Unacked    int64 `json:"unacked,omitempty"`

	// Catch-up: the bytes behind; Listed, start to listed unfenced by
	// the others.
	Bytes  int64   `json:"bytes,omitempty"`
	Listed float64 `json:"listed_s,omitempty"`

	// Recovery says why the cluster did not recover after the round's
	// fault (the figure stands; the next round waits for full ISRs).
	Recovery string `json:"recovery,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Timeline bins of the first kill.
const (
	TimelineBin  = 50 * time.Millisecond
	TimelineFrom = time.Second
	TimelineTo   = 3 * time.Second
)

// Failure implements bench.Rep.
func (r Rep) Failure() string { return r.Error }

func failed(err error) Rep { return Rep{Error: err.Error()} }

// Figures of a repetition, NaN for a failed one or one without it.
var (
	RecordsPerSec = bench.Figure(func(r Rep) float64 { return r.RecordsPerSec })
	BytesPerSec   = bench.Figure(func(r Rep) float64 { return r.BytesPerSec })
	P50           = bench.Figure(func(r Rep) float64 { return r.P50 })
	P99           = bench.Figure(func(r Rep) float64 { return r.P99 })
	P999          = bench.Figure(func(r Rep) float64 { return r.P999 })
	Max           = bench.Figure(func(r Rep) float64 { return r.Max })
	Seconds       = bench.Figure(func(r Rep) float64 { return r.Seconds })
	Shutdown      = bench.Figure(func(r Rep) float64 { return r.Shutdown })
	Quiet         = bench.Figure(func(r Rep) float64 { return r.Quiet })
	Listed        = bench.Figure(func(r Rep) float64 { return r.Listed })
	// CatchUpRate is the catch-up's bytes over its time.
	CatchUpRate = bench.Figure(func(r Rep) float64 { return bench.Div(float64(r.Bytes), r.Seconds) })
	// FlushesPerBatch and CPUPerRecord (seconds) of a closed-loop run.
	FlushesPerBatch = bench.Figure(func(r Rep) float64 { return bench.Div(float64(r.Flushes), float64(r.Batches)) })
	CPUPerRecord    = bench.Figure(func(r Rep) float64 { return bench.Div(r.CPUSeconds, float64(r.Records)) })
)

// Cell is one engine under one workload.
type Cell = bench.Cell[Rep]

// Result is everything a run measured.
type Result struct {
	bench.Facts
	Config struct {
		Engines      []string `json:"engines"`
		Sync         string   `json:"sync"`
		Args         []string `json:"args,omitempty"`
		RecordBytes  int      `json:"record_bytes"`
		Partitions   int32    `json:"partitions"`
		RunSeconds   float64  `json:"run_s"`
		Reps         int      `json:"reps"`
		Kills        int      `json:"kills"`
		Stops        int      `json:"stops"`
		FaultRate    float64  `json:"fault_rate"`
		CatchUpBytes int64    `json:"catch_up_bytes"`
		IngestReps   int      `json:"ingest_reps"`
		Ingest       struct {
			Records      int64 `json:"records"`
			RecordBytes  int   `json:"record_bytes"`
			BatchRecords int   `json:"batch_records"`
		} `json:"ingest"`
	} `json:"config"`
	Cells  []*Cell       `json:"cells"`
	Checks []bench.Check `json:"checks"`
}

// Cell finds engine's cell under workload, or nil.
func (r *Result) Cell(engine, workload string) *Cell {
	return bench.FindCell(r.Cells, engine, workload)
}

func (r *Result) add(engine, workload string, rep Rep) {
	bench.AddRep(&r.Cells, engine, workload, topology(workload), rep)
}

func topology(workload string) bench.Topology {
	switch workload {
	case ProduceRF1, LatencyRF1, Ingest:
		return bench.Topology{}
	case KillLeader:
		return bench.Topology{Brokers: Replicas, ReplicationFactor: Replicas, Faults: []string{"kill-leader"}}
	case StopLeader:
		return bench.Topology{Brokers: Replicas, ReplicationFactor: Replicas, Faults: []string{"stop-leader"}}
	case Audit:
		return bench.Topology{Brokers: Replicas, ReplicationFactor: Replicas, Faults: []string{"kill-leader", "stop-leader"}}
	case CatchUp:
		return bench.Topology{Brokers: Replicas, ReplicationFactor: Replicas, Faults: []string{"stop-follower", "start-follower"}}
	}
	return bench.Topology{Brokers: Replicas, ReplicationFactor: Replicas}
}

func (c *Config) defaults() {
	bench.Default(&c.RecordBytes, DefaultRecordBytes)
	bench.Default(&c.Reps, DefaultReps)
	bench.Default(&c.Kills, DefaultKills)
	bench.Default(&c.Stops, DefaultStops)
	bench.Default(&c.IngestReps, DefaultIngestReps)
	bench.Default(&c.Partitions, DefaultPartitions)
	bench.Default(&c.Run, DefaultRun)
	bench.Default(&c.FaultRate, DefaultFaultRate)
	bench.Default(&c.CatchUpBytes, DefaultCatchUpBytes)
	if c.Ingest.Records <= 0 {
		c.Ingest = logbench.Default()
	}
	c.Servers.Defaults()
}

// Run measures every engine in turn. A measurement that fails is
// recorded in its cell and the run goes on; the error is for an
// interrupted run (the result then holds what finished).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	facts, err := cfg.Begin()
	if err != nil {
		return nil, fmt.Errorf("replbench: %w", err)
	}
	res := &Result{Facts: facts}
	k := &res.Config
	k.Engines, k.Sync, k.Args, k.RecordBytes, k.Partitions = cfg.Engines, cfg.Sync, cfg.Args, cfg.RecordBytes, cfg.Partitions
	k.RunSeconds, k.Reps, k.Kills, k.Stops, k.FaultRate = cfg.Run.Seconds(), cfg.Reps, cfg.Kills, cfg.Stops, cfg.FaultRate
	k.CatchUpBytes, k.IngestReps = cfg.CatchUpBytes, cfg.IngestReps
	k.Ingest.Records, k.Ingest.RecordBytes, k.Ingest.BatchRecords = cfg.Ingest.Records, cfg.Ingest.RecordBytes, cfg.Ingest.BatchRecords
	for _, e := range cfg.Engines {
		if err = ctx.Err(); err != nil {
			break
		}
		fmt.Fprintf(cfg.Log, "replication: %s\n", e)
		measureEngine(ctx, &cfg, res, e)
	}
	res.End()
	res.Checks = res.Judge()
	return res, err
}

// engineRun is what one engine's measurements share.
type engineRun struct {
	cfg    *Config
	res    *Result
	engine string
	dir    string
	c      *harness.Cluster
}

func (e *engineRun) add(workload string, r Rep) { e.res.add(e.engine, workload, r) }

func (e *engineRun) logf(format string, args ...any) {
	fmt.Fprintf(e.cfg.Log, "  "+format+"\n", args...)
}

// measureEngine runs every measurement of one engine: the bulk ingest in
// this process, then the single broker against the cluster, the faults,
// and the catch-up on the same cluster.
func measureEngine(ctx context.Context, cfg *Config, res *Result, engine string) {
	e := &engineRun{cfg: cfg, res: res, engine: engine, dir: filepath.Join(cfg.Dir, engine)}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		e.add(ProduceRF3, failed(err))
		return
	}
	defer os.RemoveAll(e.dir)
	e.ingest()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	c, err := harness.StartCluster(sctx, harness.ClusterConfig{Bin: cfg.Bin, Engine: engine, Brokers: Replicas,
		Dir: filepath.Join(e.dir, "cluster"), Sync: cfg.Sync, Args: append([]string{"-min-insync-replicas", fmt.Sprint(MinISR)}, cfg.Args...),
		Log: cfg.ServerLog})
	cancel()
	if err != nil {
		for _, w := range []string{ProduceRF3, KillLeader, StopLeader, CatchUp} {
			e.add(w, failed(fmt.Errorf("start the cluster: %w", err)))
		}
		return
	}
	defer c.Close()
	e.c = c
	e.throughput(ctx)
	e.faults(ctx)
	e.catchUp(ctx)
}

// ingest measures the engine's bulk ingest, IngestReps times.
func (e *engineRun) ingest() {
	for i := range e.cfg.IngestReps {
		dir := filepath.Join(e.dir, fmt.Sprintf("ingest-%d", i))
		s := logbench.Ingest(e.engine, dir, e.cfg.Ingest)
		_ = os.RemoveAll(dir)
		r := Rep{Seconds: s.Seconds, Bytes: s.PayloadBytes, BytesPerSec: logbench.BytesPerSecond(s), RecordsPerSec: logbench.RecordsPerSecond(s), Error: s.Err}
		e.logf("bulk ingest %d: %s", i+1, sayRate(r))
		e.add(Ingest, r)
	}
}

func sayRate(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	return fmt.Sprintf("%s records/s, %s MB/s", bench.Rate(r.RecordsPerSec), bench.MB(r.BytesPerSec))
}
