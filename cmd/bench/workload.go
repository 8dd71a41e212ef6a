package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/runner"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
)

// Every embedded workload (bench/workloads/NAME.yaml) is a profile, and
// so is a workload file named by its path: -profile path/to/file.yaml.
func init() {
	for _, name := range workloads.Names() {
		w, err := workloads.Load(name)
		if err != nil {
			panic(err) // the embedded files are tested
		}
		register(workloadProfile(w))
	}
}

func workloadProfile(w *workloads.Workload) profile {
	md, js := result.Files(w.Name)
	return profile{
		name:    w.Name,
		summary: w.Title + " (bench/workloads/" + w.Name + ".yaml)",
		writes:  fmt.Sprintf("results/%s and %s", md, js),
		flags:   func(fs *flag.FlagSet) plan { return workloadFlags(fs, w) },
	}
}

// workloadPlan runs a workload file.
type workloadPlan struct {
	w          *workloads.Workload
	quick      bool
	reps       int
	servers    string
	cells      string
	brokerBin  string
	brokerArgs string
	upgradeRef string
}

func workloadFlags(fs *flag.FlagSet, w *workloads.Workload) plan {
	p := &workloadPlan{w: w}
	fs.BoolVar(&p.quick, "quick", false, fmt.Sprintf("smoke run: one repetition, record counts and durations divided by %d", w.Quick.Divide))
	fs.IntVar(&p.reps, "reps", 0, "repetitions of every cell (default: the workload's)")
	fs.StringVar(&p.servers, "servers", "", "measure only these of the workload's servers, comma-separated")
	fs.StringVar(&p.cells, "cells", "", "measure only these of the workload's cells, comma-separated")
	fs.StringVar(&p.upgradeRef, "upgrade-from", "", "git ref of the older build the cells of topology upgrade start on (built from a copy of that tree); without it they are left out")
	fs.StringVar(&p.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&p.brokerArgs, "broker-args", "", "extra broker flags, space-separated, after the workload's")
	return p
}

// workload is the workload the flags make of the file.
func (p *workloadPlan) workload() *workloads.Workload {
	w := *p.w
	if p.quick {
		w = *w.Shrunk()
	}
	extra := strings.Fields(p.brokerArgs)
	w.Topology.BrokerArgs = append(slices.Clone(w.Topology.BrokerArgs), extra...)
	only := bench.SplitList(p.servers)
	if cells := bench.SplitList(p.cells); len(cells) > 0 || p.upgradeRef == "" {
		w.Cells = slices.DeleteFunc(slices.Clone(w.Cells), func(c workloads.Cell) bool {
			return (len(cells) > 0 && !slices.Contains(cells, c.Name)) || (p.upgradeRef == "" && w.TopologyOf(c).Upgrade)
		})
		w.Targets = slices.DeleteFunc(slices.Clone(w.Targets), func(t workloads.Target) bool { return w.Cell(t.Cell) == nil })
		w.Charts = slices.DeleteFunc(slices.Clone(w.Charts), func(ch workloads.Chart) bool { return w.Cell(ch.Cell) == nil })
	}
	w.Cells = slices.Clone(w.Cells)
	for i := range w.Cells {
		c := &w.Cells[i]
		if c.Topology != nil && c.Topology.BrokerArgs != nil {
			t := *c.Topology
			t.BrokerArgs = append(slices.Clone(t.BrokerArgs), extra...)
			c.Topology = &t
		}
		if p.reps > 0 {
			c.Reps = p.reps
		}
		if len(only) > 0 {
			c.Servers = slices.DeleteFunc(slices.Clone(c.Servers), func(s string) bool {
				return !slices.Contains(only, s) && s != w.Reference
			})
		}
	}
	if len(only) > 0 {
		w.Targets = slices.DeleteFunc(slices.Clone(w.Targets), func(t workloads.Target) bool { return !slices.Contains(only, t.Server) })
	}
	return &w
}

func (p *workloadPlan) measure(ctx context.Context, e *env) error {
	w := p.workload()
	if !slices.ContainsFunc(w.Cells, func(c workloads.Cell) bool { return len(c.Servers) > 0 }) {
		return usageErr("-servers %q: no server of the workload (%s)", p.servers, strings.Join(p.w.Servers, ", "))
	}
	dir, logs, bin, err := e.brokerProcesses(ctx, p.brokerBin)
	if err != nil {
		return err
	}
	me, err := self()
	if err != nil {
		return err
	}
	desc := "broker (built from ./cmd/broker)"
	if p.brokerBin != "" {
		desc = p.brokerBin
	}
	setup := p.setup(w, desc)
	var old string
	if p.upgradeRef != "" {
		if old, err = buildBrokerAt(ctx, e, p.upgradeRef); err != nil {
			return err
		}
		setup = append(setup, fmt.Sprintf("upgrade: the cells of topology upgrade start on cmd/broker built from git ref %s (commit %s), then move to this build",
			p.upgradeRef, gitCommit(ctx, p.upgradeRef)))
	}
	cfg := runner.Config{
		Workload: w, Quick: p.quick, Dir: dir, Log: e.stderr, Bar: e.bar(false), Command: e.command,
		Bin: bin, UpgradeFrom: old,
		Start: func(name string, t workloads.Topology) harness.Starter {
			if name == "kfake" {
				return harness.Kfake(me, t.Partitions, logs)
			}
			return harness.Broker(bin, name, t.Partitions, t.BrokerArgs, logs)
		},
		Cluster: func(ctx context.Context, cc harness.ClusterConfig) (*harness.Cluster, error) {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cc.Bin, cc.Log = cmp.Or(cc.Bin, bin), logs
			return harness.StartCluster(sctx, cc)
		},
		Setup: setup,
	}
	res, err := runner.Run(ctx, cfg)
	if res != nil {
		if werr := publishResult(res, e); werr != nil {
			return werr
		}
	}
	return err
}

// setup says how the servers ran, for the report: a line for single
// servers and one for clusters, as the cells use them.
func (p *workloadPlan) setup(w *workloads.Workload, brokerBin string) []string {
	lines := []string{"client: franz-go in the benchmark process; the servers run in their own processes on the same machine"}
	single, cluster := false, false
	for _, c := range w.Cells {
		t := w.TopologyOf(c)
		if t.Brokers > 1 && !cluster {
			cluster = true
			args := harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…", t.Sync)
			lines = append(lines, fmt.Sprintf("clusters: %d of `%s %s` as child processes, every one a controller voter, fresh for every cell and repetition",
				t.Brokers, brokerBin, strings.Join(append(args, t.BrokerArgs...), " ")))
			if t.Netns {
				lines = append(lines, "hosts: each broker of a cluster in a network namespace of its own with its own address; the clients in the benchmark's, reaching every broker over the bridge")
			}
		}
		if t.Brokers <= 1 && !single {
			single = true
			args := harness.BrokerArgs("ENGINE", "DIR", "ADDR", "METRICS_ADDR", t.Sync, t.Partitions)
			lines = append(lines,
				"kfake: `bench serve-kfake` (this binary) as a child process (franz-go kfake, one broker, in memory, never fsyncs)",
				fmt.Sprintf("broker: `%s %s` as a child process, fresh for every cell and repetition", brokerBin,
					strings.Join(append(args, t.BrokerArgs...), " ")))
		}
	}
	return lines
}

// render writes the report of an earlier run again. A cell's columns and
// description follow today's workload file, so that a column added there
// shows figures the run already recorded; what ran (servers, cells,
// targets, as the run's flags chose them) and the figures are the run's.
func (p *workloadPlan) render(path string, e *env) error {
	res, err := result.Read(path)
	if err != nil {
		return err
	}
	if res.Workload.Name == p.w.Name {
		for i, c := range res.Workload.Cells {
			for _, now := range p.w.Cells {
				if now.Name == c.Name {
					res.Workload.Cells[i].Columns, res.Workload.Cells[i].Description = now.Columns, now.Description
				}
			}
		}
	}
	return publishResult(res, e)
}

// publishResult writes a result's report, charts and JSON into -out, and
// prints its checks.
func publishResult(res *result.Result, e *env) error {
	if err := res.Write(e.out); err != nil {
		return err
	}
	for _, c := range res.Checks {
		fmt.Fprintln(e.stderr, c)
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", res.Path(e.out))
	return nil
}
