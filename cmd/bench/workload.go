package main

import (
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
	brokerBin  string
	brokerArgs string
}

func workloadFlags(fs *flag.FlagSet, w *workloads.Workload) plan {
	p := &workloadPlan{w: w}
	fs.BoolVar(&p.quick, "quick", false, fmt.Sprintf("smoke run: one repetition, record counts and durations divided by %d", w.Quick.Divide))
	fs.IntVar(&p.reps, "reps", 0, "repetitions of every cell (default: the workload's)")
	fs.StringVar(&p.servers, "servers", "", "measure only these of the workload's servers, comma-separated")
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
	w.Topology.BrokerArgs = append(slices.Clone(w.Topology.BrokerArgs), strings.Fields(p.brokerArgs)...)
	only := bench.SplitList(p.servers)
	w.Cells = slices.Clone(w.Cells)
	for i := range w.Cells {
		c := &w.Cells[i]
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
	cfg := runner.Config{
		Workload: w, Quick: p.quick, Dir: dir, Log: e.stderr, Bar: e.bar(false), Command: e.command,
		Start: func(name string) harness.Starter {
			if name == "kfake" {
				return harness.Kfake(me, w.Topology.Partitions, logs)
			}
			return harness.Broker(bin, name, w.Topology.Partitions, w.Topology.BrokerArgs, logs)
		},
		Cluster: func(ctx context.Context, engine, dir string) (*harness.Cluster, error) {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			return harness.StartCluster(sctx, harness.ClusterConfig{Bin: bin, Engine: engine, Brokers: w.Topology.Brokers,
				Dir: dir, Sync: w.Topology.Sync, Args: w.Topology.BrokerArgs, Log: logs})
		},
		Setup: p.setup(w, desc),
	}
	res, err := runner.Run(ctx, cfg)
	if res != nil {
		if werr := publishResult(res, e); werr != nil {
			return werr
		}
	}
	return err
}

// setup says how the servers ran, for the report.
func (p *workloadPlan) setup(w *workloads.Workload, brokerBin string) []string {
	lines := []string{"client: franz-go in the benchmark process; the servers run in their own processes on the same machine"}
	if w.Topology.Brokers > 1 {
		args := harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…", w.Topology.Sync)
		return append(lines, fmt.Sprintf("brokers: %d of `%s %s` as child processes, every one a controller voter, fresh for every cell and repetition",
			w.Topology.Brokers, brokerBin, strings.Join(append(args, w.Topology.BrokerArgs...), " ")))
	}
	args := harness.BrokerArgs("ENGINE", "DIR", "ADDR", "METRICS_ADDR", w.Topology.Sync, w.Topology.Partitions)
	return append(lines,
		"kfake: `bench serve-kfake` (this binary) as a child process (franz-go kfake, one broker, in memory, never fsyncs)",
		fmt.Sprintf("broker: `%s %s` as a child process, fresh for every cell and repetition", brokerBin,
			strings.Join(append(args, w.Topology.BrokerArgs...), " ")))
}

func (p *workloadPlan) render(path string, e *env) error {
	res, err := result.Read(path)
	if err != nil {
		return err
	}
	return publishResult(res, e)
}

func publishResult(res *result.Result, e *env) error {
	md, _ := result.Files(res.Workload.Name)
	return e.publish(res.Write, res.Checks, md)
}
