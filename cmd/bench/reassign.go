package main

import (
	"context"
	"flag"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/reassign"
	"github.com/minikafka/minikafka/broker/harness"
)

func init() {
	register(profile{
		name: "reassign",
		summary: "a partition reassignment under load per engine: four brokers, a topic filled to a GiB on three of them, every partition's " +
			"replica on broker 1 moved to broker 4 while acks=all producers run; throughput during the move against before, the longest gap " +
			"between acknowledgements, everything read back",
		writes: "results/reassign.md and reassign.json",
		flags:  reassignFlags,
	})
}

type reassignPlan struct {
	engines    string
	brokerBin  string
	brokerArgs string
	cfg        reassign.Config
}

func reassignFlags(fs *flag.FlagSet) plan {
	o := &reassignPlan{}
	fs.StringVar(&o.engines, "engines", "segment,pebble,badger", "engines, one after the other")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&o.cfg.Sync, "sync", "always", "brokers' -sync policy")
	fs.Int64Var(&o.cfg.Bytes, "bytes", reassign.DefaultBytes, "topic size when the move starts")
	fs.IntVar(&o.cfg.RecordBytes, "record-size", reassign.DefaultRecordBytes, "value bytes of the closed-loop producer's records")
	fs.Float64Var(&o.cfg.Rate, "rate", reassign.DefaultRate, "records per second of the tracked producer")
	fs.DurationVar(&o.cfg.Window, "window", reassign.DefaultWindow, "how long the throughput before the move is measured")
	fs.Float64Var(&o.cfg.Throttle, "throttle", reassign.DefaultThrottle, "the move's replication throttle, times the bytes/s the topic grew by on disk before it (negative: none)")
	return o
}

func (o *reassignPlan) measure(ctx context.Context, e *env) error {
	o.cfg.Engines = bench.SplitList(o.engines)
	if len(o.cfg.Engines) == 0 {
		return usageErr("-engines names at least one")
	}
	dir, logs, bin, err := e.brokerProcesses(ctx, o.brokerBin)
	if err != nil {
		return err
	}
	o.cfg.Bin, o.cfg.Args, o.cfg.Dir, o.cfg.Command = bin, strings.Fields(o.brokerArgs), dir, e.command
	o.cfg.Log, o.cfg.ServerLog = e.stderr, logs
	o.cfg.Setup = []string{
		"cluster: `broker " + strings.Join(append(harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…,4@…", o.cfg.Sync),
			"-min-insync-replicas", "2"), " ") + strings.TrimSpace(" "+o.brokerArgs) + "` as child processes (built from ./cmd/broker), every one a controller voter",
	}
	res, err := reassign.Measure(ctx, o.cfg)
	if res != nil {
		if werr := e.publish(res.Write, res.Checks, reassign.ReportFile); werr != nil {
			return werr
		}
	}
	return err
}

func (o *reassignPlan) render(path string, e *env) error {
	res, err := reassign.Load(path)
	if err != nil {
		return err
	}
	return e.publish(res.Write, res.Checks, reassign.ReportFile)
}
