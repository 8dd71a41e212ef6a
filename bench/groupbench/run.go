package groupbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/engine"
)

// The plan's fixed shape and its targets.
const (
	ChurnPartitions = 12
	ChurnMembers    = 3
	SettleMembers   = 10
	ChurnTarget     = 3           // partitions that may change owner when a 4th member joins
	SettleTarget    = time.Second // from the last JoinGroup to a settled group
	LoadTarget      = 5.0         // percent produce throughput the group traffic may cost
	loadHeartbeat   = 3 * time.Second
	loadCommit      = 5 * time.Second
)

// Workloads of a cell.
const (
	ChurnCooperative = "churn-cooperative-sticky"
	ChurnRange       = "churn-range"
	Settle           = "settle"
	// Load is a pair of produce runs: without group traffic, then with.
	LoadPairs = "load"
)

// Config is one run of the groups profile.
type Config struct {
	Engines []string
	// Runs is the settle measurements per engine.
	Runs int
	// LoadGroups heartbeat and commit during the load pairs, each of
	// LoadRun per produce run with records of RecordBytes; LoadReps pairs
	// (0 skips the load measurement).
	LoadGroups  int
	LoadRun     time.Duration
	RecordBytes int
	LoadReps    int
	// Dir holds the brokers' data directories.
	Dir     string
	Command string
	Log     io.Writer
}

// Rep is one measurement; the fields its workload has are set.
type Rep struct {
	// Moved counts the partitions whose owner changed (churn); Before and
	// After are the assignments, partitions per member (churn).
	Moved  int    `json:"moved,omitempty"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// SettleMillis is until the group settled again (churn: from the new
	// member's start; settle: from the last JoinGroup written).
	SettleMillis float64 `json:"settle_ms,omitempty"`
	// Baseline and WithGroups are the produce rates of a load pair;
	// GroupRequests the heartbeats and commits per second meanwhile.
	Baseline      float64 `json:"baseline_records_per_s,omitempty"`
	WithGroups    float64 `json:"with_groups_records_per_s,omitempty"`
	GroupRequests float64 `json:"group_requests_per_s,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// Failure implements bench.Rep.
func (r Rep) Failure() string { return r.Error }

// Figures of a repetition, NaN for a failed one.
var (
	Moved         = figure(func(r Rep) float64 { return float64(r.Moved) })
	SettleMillis  = figure(func(r Rep) float64 { return r.SettleMillis })
	Baseline      = figure(func(r Rep) float64 { return r.Baseline })
	WithGroups    = figure(func(r Rep) float64 { return r.WithGroups })
	GroupRequests = figure(func(r Rep) float64 { return r.GroupRequests })
	// Change is a load pair's relative change in percent (negative:
	// slower with groups). Pairing compares runs close in time, so a
	// machine whose speed drifts disturbs it less than comparing medians.
	Change = figure(func(r Rep) float64 { return (bench.Div(r.WithGroups, r.Baseline) - 1) * 100 })
)

func figure(f func(Rep) float64) func(Rep) float64 {
	return func(r Rep) float64 {
		if r.Error != "" {
			return math.NaN()
		}
		return f(r)
	}
}

// Cell is one engine under one workload.
type Cell = bench.Cell[Rep]

// Result is everything a run measured.
type Result struct {
	bench.Facts
	Config struct {
		Runs                 int     `json:"runs"`
		LoadGroups           int     `json:"load_groups"`
		LoadRunSeconds       float64 `json:"load_run_s"`
		RecordBytes          int     `json:"record_bytes"`
		InitialRebalanceWait float64 `json:"initial_rebalance_delay_s"`
	} `json:"config"`
	Engines []string      `json:"engines"`
	Cells   []*Cell       `json:"cells"`
	Checks  []bench.Check `json:"checks"`
}

// Cell finds engine's cell under workload, or nil.
func (r *Result) Cell(engine, workload string) *Cell {
	return bench.FindCell(r.Cells, engine, workload)
}

func (r *Result) add(engine, workload string, rep Rep) {
	bench.AddRep(&r.Cells, engine, workload, bench.Topology{}, rep)
}

// Run measures every engine in turn, each on its own in-process broker
// under sync=always. A measurement that fails is recorded in its cell and
// the run goes on; the error is for an interrupted run (the result holds
// what finished).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	res := &Result{Facts: bench.Begin(cfg.Dir, cfg.Command), Engines: cfg.Engines}
	res.Setup = []string{
		"clients: franz-go group consumers in the benchmark process",
		"broker: one in-process broker per engine (broker.New), sync=always, on a fresh data directory",
	}
	res.Config.Runs, res.Config.LoadGroups, res.Config.RecordBytes = cfg.Runs, cfg.LoadGroups, cfg.RecordBytes
	res.Config.LoadRunSeconds = cfg.LoadRun.Seconds()
	res.Config.InitialRebalanceWait = group.DefaultInitialRebalanceDelay.Seconds()
	var err error
	for _, name := range cfg.Engines {
		if err = ctx.Err(); err != nil {
			break
		}
		fmt.Fprintf(cfg.Log, "groups: %s\n", name)
		if merr := measure(ctx, res, cfg, name); merr != nil {
			fmt.Fprintf(cfg.Log, "  FAILED: %v\n", merr)
		}
	}
	res.End()
	res.Checks = res.Judge()
	return res, err
}

// measure starts a broker on engineName and takes every measurement on
// it; an error is the broker's (its cells then say so).
func measure(ctx context.Context, res *Result, cfg Config, engineName string) error {
	s, err := broker.New(broker.Config{
		Dir:           filepath.Join(cfg.Dir, engineName),
		Engine:        engineName,
		EngineOptions: engine.Options{Sync: engine.SyncAlways},
		Logger:        slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err == nil {
		defer s.Close()
	}
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		for _, w := range []string{ChurnCooperative, ChurnRange, Settle, LoadPairs} {
			res.add(engineName, w, Rep{Error: "start: " + err.Error()})
		}
		return err
	}
	go s.Serve(ln)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b := &Bench{Addrs: []string{ln.Addr().String()}, Topic: "groupbench", Partitions: ChurnPartitions, Poll: 2 * time.Millisecond}
	if err := b.Prepare(ctx); err != nil {
		res.add(engineName, ChurnCooperative, Rep{Error: "create topic: " + err.Error()})
		return err
	}
	for _, c := range []struct {
		workload string
		balancer kgo.GroupBalancer
	}{{ChurnCooperative, kgo.CooperativeStickyBalancer()}, {ChurnRange, kgo.RangeBalancer()}} {
		cr, err := b.Churn(ctx, ChurnMembers, c.balancer)
		res.add(engineName, c.workload, churnRep(cr, err))
	}
	for range cfg.Runs {
		d, err := b.Settle(ctx, SettleMembers)
		res.add(engineName, Settle, Rep{SettleMillis: ms(d), Error: errText(err)})
	}
	for i := range cfg.LoadReps {
		res.add(engineName, LoadPairs, loadPair(ctx, b, cfg, i))
	}
	return nil
}

func churnRep(cr ChurnResult, err error) Rep {
	if err != nil {
		return Rep{Error: err.Error()}
	}
	return Rep{Moved: cr.Moved, SettleMillis: ms(cr.Settle), Before: shape(cr.Before), After: shape(cr.After)}
}

// loadPair runs a produce run without group traffic, then one with, each
// on a fresh topic.
func loadPair(ctx context.Context, b *Bench, cfg Config, i int) Rep {
	base, err := b.ProduceRate(ctx, fmt.Sprintf("plain-%d", i), cfg.LoadRun, cfg.RecordBytes)
	if err != nil {
		return Rep{Error: "baseline: " + err.Error()}
	}
	gl, err := b.StartGroupLoad(ctx, cfg.LoadGroups, "committed", loadHeartbeat, loadCommit)
	if err != nil {
		return Rep{Error: "group load: " + err.Error()}
	}
	// A benchmark waiting out one commit interval, not a test: the load
	// then runs at its steady rate for the whole produce run.
	time.Sleep(loadCommit)
	start, before := time.Now(), gl.Requests()
	rate, err := b.ProduceRate(ctx, fmt.Sprintf("loaded-%d", i), cfg.LoadRun, cfg.RecordBytes)
	elapsed, reqs := time.Since(start), gl.Requests()-before
	_, lerr := gl.Stop()
	if err = errors.Join(err, lerr); err != nil {
		return Rep{Error: "with groups: " + err.Error()}
	}
	return Rep{Baseline: base, WithGroups: rate, GroupRequests: float64(reqs) / elapsed.Seconds()}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// shape renders an assignment without member ids: partitions per member,
// sorted, e.g. "[0 3 6 9] [1 4 7 10] [2 5 8 11]".
func shape(a Assignment) string {
	var parts []string
	for _, ps := range a {
		parts = append(parts, fmt.Sprint(ps))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
