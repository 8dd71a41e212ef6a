package main

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/groupbench"
	"github.com/minikafka/minikafka/engine"
)

func init() {
	register(profile{
		name:    "groups",
		summary: "consumer groups on an in-process broker per engine: churn when a member joins, settle time, produce throughput beside 100 groups' heartbeats and commits",
		writes:  "results/groups.md and groups.json",
		flags:   groupsFlags,
	})
}

// groupsPlan is the groups profile (formerly cmd/groupbench).
type groupsPlan struct {
	engines string
	cfg     groupbench.Config
}

func groupsFlags(fs *flag.FlagSet) plan {
	o := &groupsPlan{}
	fs.StringVar(&o.engines, "engines", strings.Join(engine.Names(), ","), "engines to measure")
	fs.IntVar(&o.cfg.Runs, "runs", 5, "settle measurements per engine")
	fs.IntVar(&o.cfg.LoadGroups, "load-groups", 100, "groups heartbeating and committing during the load measurement")
	fs.DurationVar(&o.cfg.LoadRun, "load-run", 15*time.Second, "length of each produce run of the load measurement")
	fs.IntVar(&o.cfg.RecordBytes, "record-size", 100, "value bytes per record")
	fs.IntVar(&o.cfg.LoadReps, "load-reps", 5, "pairs of produce runs, without then with groups (0: skip)")
	return o
}

func (o *groupsPlan) measure(ctx context.Context, e *env) error {
	dir, err := e.dataDir()
	if err != nil {
		return err
	}
	o.cfg.Engines, o.cfg.Dir, o.cfg.Command, o.cfg.Log = bench.SplitList(o.engines), dir, e.command, e.stderr
	if len(o.cfg.Engines) == 0 {
		return usageErr("-engines is empty")
	}
	res, err := groupbench.Run(ctx, o.cfg)
	if werr := writeGroups(res, e); werr != nil {
		return werr
	}
	return err
}

func writeGroups(res *groupbench.Result, e *env) error {
	return e.publish(res.Write, res.Checks, groupbench.ReportFile)
}

func (o *groupsPlan) render(path string, e *env) error {
	res, err := groupbench.Load(path)
	if err != nil {
		return err
	}
	return writeGroups(res, e)
}
