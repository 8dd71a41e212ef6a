package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/bench/result"
)

func init() {
	register(profile{
		name:    "engines",
		summary: "every engine side by side with raw-file group-commit baselines, in this process: durable append, bulk ingest of a GiB, cold read, reopen, restart after kill -9, truncations, deletion, follower catch-up, write and space amplification",
		writes:  "results/engines.md and engines.json",
		flags:   enginesFlags,
	})
}

// enginesPlan is the engines profile (formerly cmd/enginebench).
type enginesPlan struct {
	quick    bool
	subjects string
	reps     int
	records  int64
	appendD  time.Duration
	probe    time.Duration
}

func enginesFlags(fs *flag.FlagSet) plan {
	o := &enginesPlan{}
	fs.BoolVar(&o.quick, "quick", false, "small sizes and one repetition: a smoke run, not a result")
	fs.StringVar(&o.subjects, "engines", "", "comma-separated subjects to measure (default: all of "+strings.Join(logbench.AllSubjects(), ",")+")")
	fs.IntVar(&o.reps, "reps", 0, "repetitions of each figure (default 3, 1 with -quick)")
	fs.Int64Var(&o.records, "records", 0, "records of the bulk ingest (default 10738000, a GiB of 100 bytes; 20000 with -quick)")
	fs.DurationVar(&o.appendD, "append-time", 0, "duration of each durable-append figure (default 5s, 100ms with -quick)")
	fs.DurationVar(&o.probe, "probe", -1, "how long to measure the device's background writes before the run (default 3s, 0 with -quick)")
	return o
}

func (o *enginesPlan) config() logbench.Config {
	cfg := logbench.Default()
	cfg.Records = logbench.ProfileRecords
	if o.quick {
		cfg = logbench.Quick()
	}
	cfg.Subjects = bench.SplitList(o.subjects)
	if o.reps > 0 {
		cfg.Reps = o.reps
	}
	if o.records > 0 {
		cfg.Records = o.records
	}
	if o.appendD > 0 {
		cfg.AppendDuration = o.appendD
	}
	if o.probe >= 0 {
		cfg.Probe = o.probe
	}
	return cfg
}

func (o *enginesPlan) measure(_ context.Context, e *env) error {
	cfg := o.config()
	dir, err := e.dataDir()
	if err != nil {
		return err
	}
	cfg.Dir, cfg.Command = dir, e.command
	if cfg.Self, err = os.Executable(); err != nil {
		return fmt.Errorf("engines: the restarts after kill -9 run this binary: %w", err)
	}
	cfg.Bar = e.bar(false)
	res, err := logbench.Run(cfg)
	if err != nil {
		return err
	}
	rr := res.Result()
	rr.Quick = o.quick
	return publishResult(rr, e)
}

// render rebuilds the report of an earlier run from its JSON, so that a
// change to the report's layout needs no new measurement; a file in
// logbench's older format is read as the one schema.
func (o *enginesPlan) render(path string, e *env) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	res, err := result.Parse(b)
	if err != nil {
		old, lerr := logbench.Parse(b)
		if lerr != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		res = old.Result()
	}
	return publishResult(res, e)
}
