// Package runner runs a workload (package bench/workloads) and returns its
// result (package bench/result): the one loop every benchmark shares.
//
// For each repetition, for each cell, for each of the cell's servers: a
// fresh server (or cluster, broker/harness) on an empty directory, the
// cell's topic, its setup steps, then its steps once per round, each round
// a repetition, through the driver (bench/load.Driver) and, on a cluster,
// the fault injector (kill, stop, restart and the waits on the cluster's
// metadata: cluster.go); then the server's own figures (its peak RSS), and
// the server is stopped and its data removed. A step that fails fails its
// repetition, which keeps the figures measured before it; the run goes on
// with the next. The error Run returns is for a
// run that could not go on (ctx ended); the result then holds what
// finished.
//
// Recording is bounded: the driver keeps latencies in HdrHistograms and
// counts, never a value per record, so that the harness does not measure
// itself (a per-acknowledgement slice once stalled a whole run).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
)

// Config is one run of a workload.
type Config struct {
	Workload *workloads.Workload
	// Quick marks the workload as shrunk for a smoke run.
	Quick bool
	// Start says how each server the workload names starts on a
	// topology; Cluster starts a cluster as cc says (the runner sets
	// everything but Bin and Log; Bin too when the topology upgrades:
	// UpgradeFrom), for a topology of several brokers.
	Start   func(name string, t workloads.Topology) harness.Starter
	Cluster func(ctx context.Context, cc harness.ClusterConfig) (*harness.Cluster, error)
	// Bin is the broker build an upgrade moves to; UpgradeFrom the older
	// one a topology with upgrade starts on.
	Bin, UpgradeFrom string
	// Dir holds the servers' data directories, one fresh per repetition.
	Dir string
	// Log gets a line per repetition; Bar, when set, draws progress.
	Log io.Writer
	Bar bench.Bar
	// Command and Setup are the report's record of how it ran.
	Command string
	Setup   []string
}

// Topic is the topic every cell's steps use.
const Topic = "bench"

// Run measures the workload.
func Run(ctx context.Context, cfg Config) (*result.Result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Bar == nil {
		cfg.Bar = bench.NoBar
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	w := cfg.Workload
	res := &result.Result{Facts: bench.Begin(cfg.Dir, cfg.Command), Workload: *w, Quick: cfg.Quick}
	res.Setup = cfg.Setup
	err := runAll(ctx, &cfg, res)
	res.End()
	res.Checks = res.Judge()
	return res, err
}

func runAll(ctx context.Context, cfg *Config, res *result.Result) error {
	reps := 0
	for _, c := range cfg.Workload.Cells {
		reps = max(reps, c.Reps)
	}
	for rep := range reps {
		for _, c := range cfg.Workload.Cells {
			// A cell of fewer repetitions runs in the last ones: after the
			// cells it may read a rate from (workloads.RateOf).
			if rep < reps-c.Reps {
				continue
			}
			for _, srv := range c.Servers {
				if err := ctx.Err(); err != nil {
					return err
				}
				fmt.Fprintf(cfg.Log, "rep %d/%d %s on %s\n", rep-(reps-c.Reps)+1, c.Reps, c.Name, srv)
				for _, r := range cfg.measure(ctx, res, c, srv, fmt.Sprintf("%s-%s-%d", c.Name, srv, rep)) {
					res.Add(c.Name, srv, r)
					fmt.Fprintf(cfg.Log, "  %s\n", summary(r, c))
				}
			}
		}
	}
	return nil
}

func summary(r result.Rep, c workloads.Cell) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	var s []string
	for i, col := range c.Columns {
		dup := slices.ContainsFunc(c.Columns[:i], func(o workloads.Column) bool { return o.Figure == col.Figure })
		if v, ok := r.Figures[col.Figure]; ok && col.Over == "" && col.OverCell == "" && !dup {
			s = append(s, col.Figure+" "+result.Format(v, col.Figure))
		}
	}
	return strings.Join(s, ", ")
}

// measure starts server srv fresh on an empty directory and runs cell c
// on it: the setup steps, then the steps once per round, a repetition
// each.
func (cfg *Config) measure(ctx context.Context, res *result.Result, c workloads.Cell, srv, dirName string) []result.Rep {
	st := &steps{cfg: cfg, res: res, topology: cfg.Workload.TopologyOf(c), srv: srv, figures: map[string]float64{}}
	defer st.close()
	fail := func(err error) []result.Rep {
		return []result.Rep{{Figures: st.figures, Error: err.Error()}}
	}
	dir := filepath.Join(cfg.Dir, dirName)
	if err := os.RemoveAll(dir); err != nil {
		return fail(fmt.Errorf("clean %s: %w", dir, err))
	}
	// A full disk would fail the next server.
	defer os.RemoveAll(dir)
	st.dir = dir
	seeds, stop, err := cfg.start(ctx, st, srv, dir)
	if err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	st.seeds, st.d = seeds, load.Kafka{Client: load.Client{Brokers: seeds}}
	reps, err := st.rounds(ctx, c)
	if err := stop(); err != nil && len(reps) > 0 && reps[len(reps)-1].Error == "" {
		reps[len(reps)-1].Error = fmt.Sprintf("stop: %v", err)
	}
	if err != nil {
		return append(reps, fail(err)...)
	}
	return reps
}

// start starts srv on dir: one server, or a cluster when the topology
// has several brokers. It returns the seed addresses and how to stop it,
// which also reads the server's peak RSS into the last repetition.
func (cfg *Config) start(ctx context.Context, st *steps, srv, dir string) ([]string, func() error, error) {
	if st.topology.Brokers > 1 && srv != "kfake" {
		t := st.topology
		hosts, err := st.hosts(t, dir)
		if err != nil {
			st.unhost()
			return nil, nil, err
		}
		cc := harness.ClusterConfig{Engine: srv, Brokers: t.Brokers, Dir: dir, Sync: t.Sync, Args: t.BrokerArgs, Hosts: hosts}
		if t.Upgrade {
			if cc.Bin = cfg.UpgradeFrom; cc.Bin == "" {
				st.unhost()
				return nil, nil, errors.New("no older build to upgrade from (cmd/bench -upgrade-from)")
			}
		}
		c, err := cfg.Cluster(ctx, cc)
		if err != nil {
			st.unhost()
			return nil, nil, err
		}
		st.cluster = c
		return c.Seeds(), func() error { c.Close(); st.unhost(); return nil }, nil
	}
	s, err := cfg.Start(srv, st.topology)(ctx, dir, st.topology.Sync)
	if err != nil {
		return nil, nil, err
	}
	st.server = s
	return []string{s.Addr()}, func() error {
		if rss, err := s.PeakRSS(); err == nil {
			st.figures["server.peak_rss_bytes"] = float64(rss)
		}
		return s.Stop()
	}, nil
}

// rounds runs the setup, then the steps once per round. Setup figures go
// to every round; a round that fails is a failed repetition and the next
// round goes on.
func (st *steps) rounds(ctx context.Context, c workloads.Cell) ([]result.Rep, error) {
	if usesTopic(c) {
		if err := st.d.CreateTopic(ctx, Topic, st.topology.Partitions, -1); err != nil {
			return nil, err
		}
	}
	for _, step := range c.Setup {
		if err := st.run(ctx, step); err != nil {
			return nil, fmt.Errorf("setup: %s: %w", step.Prefix(), err)
		}
	}
	// Loads the setup started run through every round.
	setupLoads := st.pump != nil || st.tracked != nil || st.groups != nil
	setup, setupTopics := st.figures, st.topics
	var reps []result.Rep
	for st.round = range c.Rounds {
		if err := ctx.Err(); err != nil {
			return reps, err
		}
		st.figures, st.topics = maps.Clone(setup), slices.Clone(setupTopics)
		st.victim, st.how, st.faultAt, st.healedAt = 0, "", time.Time{}, time.Time{}
		rep := result.Rep{Figures: st.figures}
		if err := st.supervise(ctx); err != nil {
			rep.Error = fmt.Sprintf("supervise: %v", err)
			reps = append(reps, rep)
			continue
		}
		for _, step := range c.Steps {
			if err := st.run(ctx, step); err != nil {
				rep.Error = fmt.Sprintf("%s: %v", step.Prefix(), err)
				break
			}
		}
		if !setupLoads {
			if err := st.endLoads(ctx); err != nil && rep.Error == "" {
				rep.Error = err.Error()
			}
		}
		reps = append(reps, rep)
	}
	if setupLoads && len(reps) > 0 {
		// st.figures is the last round's: the audit goes there.
		if err := st.endLoads(ctx); err != nil && reps[len(reps)-1].Error == "" {
			reps[len(reps)-1].Error = err.Error()
		}
	}
	return reps, nil
}

// usesTopic reports whether the cell produces, consumes or runs groups
// without creating a topic of its own: then the runner makes the topic
// they share.
func usesTopic(c workloads.Cell) bool {
	uses := false
	for _, s := range append(slices.Clone(c.Setup), c.Steps...) {
		if s.CreateTopic != nil {
			return false
		}
		uses = uses || s.Produce != nil || s.Consume != nil || s.Churn != nil || s.Settle != nil || s.Groups != nil
	}
	return uses
}
