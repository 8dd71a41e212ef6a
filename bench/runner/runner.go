// Package runner runs a workload (package bench/workloads) and returns its
// result (package bench/result): the one loop every benchmark shares.
//
// For each repetition, for each cell, for each of the cell's servers: a
// fresh server on an empty directory, the cell's topic, the cell's steps in
// order through the driver (bench/load.Driver), the server's own figures
// (its peak RSS), then the server is stopped and its data removed. A step
// that fails fails that repetition, which keeps the figures measured
// before it; the run goes on with the next. The error Run returns is for a
// run that could not go on (ctx ended); the result then holds what
// finished.
//
// Recording is bounded: the driver keeps latencies in HdrHistograms and
// counts, never a value per record, so that the harness does not measure
// itself (a per-acknowledgement slice once stalled a whole run).
package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	// Start says how each server the workload names starts.
	Start func(name string) harness.Starter
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
			if rep >= c.Reps {
				continue
			}
			for _, srv := range c.Servers {
				if err := ctx.Err(); err != nil {
					return err
				}
				fmt.Fprintf(cfg.Log, "rep %d/%d %s on %s\n", rep+1, c.Reps, c.Name, srv)
				r := cfg.measure(ctx, c, srv, fmt.Sprintf("%s-%s-%d", c.Name, srv, rep))
				res.Add(c.Name, srv, r)
				fmt.Fprintf(cfg.Log, "  %s\n", summary(r, c))
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
	for _, col := range c.Columns {
		if v, ok := r.Figures[col.Figure]; ok && col.Over == "" {
			s = append(s, col.Figure+" "+result.Format(v, col.Figure))
		}
	}
	return strings.Join(s, ", ")
}

// measure is one repetition of cell c on server srv.
func (cfg *Config) measure(ctx context.Context, c workloads.Cell, srv, dirName string) (rep result.Rep) {
	rep.Figures = map[string]float64{}
	fail := func(err error) result.Rep {
		rep.Error = err.Error()
		return rep
	}
	dir := filepath.Join(cfg.Dir, dirName)
	if err := os.RemoveAll(dir); err != nil {
		return fail(fmt.Errorf("clean %s: %w", dir, err))
	}
	s, err := cfg.Start(srv)(ctx, dir, cfg.Workload.Topology.Sync)
	if err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	defer func() {
		if err := s.Stop(); err != nil && rep.Error == "" {
			rep.Error = fmt.Sprintf("stop: %v", err)
		}
		// A full disk would fail the next server.
		_ = os.RemoveAll(dir)
	}()
	d := load.Kafka{Client: load.Client{Brokers: []string{s.Addr()}}}
	if err := d.CreateTopic(ctx, Topic, cfg.Workload.Topology.Partitions, -1); err != nil {
		return fail(err)
	}
	st := &steps{cfg: cfg, d: d, srv: srv, figures: rep.Figures}
	for _, step := range c.Steps {
		if err := st.run(ctx, step); err != nil {
			return fail(fmt.Errorf("%s: %w", step.Prefix(), err))
		}
	}
	if rss, err := s.PeakRSS(); err == nil {
		rep.Figures["server.peak_rss_bytes"] = float64(rss)
	}
	return rep
}
