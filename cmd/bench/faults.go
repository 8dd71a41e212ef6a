package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/faults"
	"github.com/minikafka/minikafka/broker/harness"
)

func init() {
	register(profile{
		name:    "faults",
		summary: "the fault matrix: {segment, pebble, badger} × {kill -9, SIGSTOP or isolation of a leader, isolation or a full disk of a follower, every broker restarted at once, a rolling restart, a rolling upgrade from an older build} under franz-go and kcat load, checked for Jepsen's anomalies (needs root: brokers in network namespaces)",
		writes:  "results/faults.md and faults.json",
		flags:   faultsFlags,
	})
}

// faultsPlan is the faults profile.
type faultsPlan struct {
	engines    string
	faults     string
	brokerBin  string
	brokerArgs string
	upgradeRef string
	ci         bool
	cfg        faults.Config
}

func faultsFlags(fs *flag.FlagSet) plan {
	o := &faultsPlan{}
	fs.StringVar(&o.engines, "engines", "segment,pebble,badger", "engines, one after the other")
	fs.StringVar(&o.faults, "faults", "", "faults, each a cell per engine (default: every one, "+faults.RollingUpgrade+" only with -upgrade-from)")
	fs.StringVar(&o.upgradeRef, "upgrade-from", "", "git ref of the older build the "+faults.RollingUpgrade+" cells start on (built from a copy of that tree)")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&o.cfg.Sync, "sync", "always", "brokers' -sync policy")
	fs.IntVar(&o.cfg.Rounds, "rounds", faults.DefaultRounds, "injections of the fault per cell, each healed before the next")
	fs.Float64Var(&o.cfg.Rate, "rate", faults.DefaultRate, "records per second of the franz-go producer")
	fs.IntVar(&o.cfg.RecordBytes, "record-size", faults.DefaultRecordBytes, "value bytes of the franz-go producer's records")
	fs.IntVar(&o.cfg.KcatBatch, "kcat-batch", faults.DefaultKcatBatch, "records per kcat process (0: no kcat load)")
	fs.DurationVar(&o.cfg.SessionTimeout, "session-timeout", faults.DefaultSessionTimeout, "brokers' -broker-session-timeout; a stopped or cut-off broker stays so twice as long")
	fs.DurationVar(&o.cfg.ProgressBound, "progress-bound", faults.DefaultProgressBound, "how soon after a heal every partition must acknowledge again")
	fs.Int64Var(&o.cfg.DiskBytes, "disk-bytes", faults.DefaultDiskBytes, "size of each broker's tmpfs in the cells that fill a disk")
	fs.BoolVar(&o.ci, "ci", false, "the CI profile: segment, "+strings.Join(faults.CI, ", ")+", one round (explicit flags win)")
	return o
}

func (o *faultsPlan) measure(ctx context.Context, e *env) error {
	if o.ci {
		if !e.given["engines"] {
			o.engines = "segment"
		}
		if !e.given["faults"] {
			o.faults = strings.Join(faults.CI, ",")
		}
		if !e.given["rounds"] {
			o.cfg.Rounds = 1
		}
	}
	if o.faults == "" {
		for _, f := range faults.Names() {
			if f != faults.RollingUpgrade || o.upgradeRef != "" {
				o.faults += f + ","
			}
		}
	}
	o.cfg.Engines, o.cfg.Faults = bench.SplitList(o.engines), bench.SplitList(o.faults)
	if len(o.cfg.Engines) == 0 || len(o.cfg.Faults) == 0 {
		return usageErr("-engines and -faults name at least one each")
	}
	dir, logs, bin, err := e.brokerProcesses(ctx, o.brokerBin)
	if err != nil {
		return err
	}
	o.cfg.Bin, o.cfg.Args, o.cfg.Dir, o.cfg.Command = bin, strings.Fields(o.brokerArgs), dir, e.command
	if o.upgradeRef != "" {
		if o.cfg.UpgradeFrom, err = buildBrokerAt(ctx, e, o.upgradeRef); err != nil {
			return err
		}
	}
	o.cfg.Log, o.cfg.ServerLog = e.stderr, logs
	o.cfg.Setup = []string{
		fmt.Sprintf("cluster: `broker %s` as child processes (built from ./cmd/broker), every one a controller voter, each in its own network namespace",
			strings.Join(append(append(harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…", o.cfg.Sync),
				"-min-insync-replicas", fmt.Sprint(faults.MinISR), "-broker-session-timeout", o.cfg.SessionTimeout.String()), o.cfg.Args...), " ")),
		"clients: franz-go and kcat in the benchmark's own network namespace, reaching every broker over the bridge",
	}
	if o.upgradeRef != "" {
		o.cfg.Setup = append(o.cfg.Setup, fmt.Sprintf("%s: the cluster starts on cmd/broker built from git ref %s (commit %s), then moves to this build",
			faults.RollingUpgrade, o.upgradeRef, gitCommit(ctx, o.upgradeRef)))
	}
	res, err := faults.Run(ctx, o.cfg)
	if res != nil {
		if werr := e.publish(res.Write, res.Checks, faults.ReportFile); werr != nil {
			return werr
		}
	}
	return err
}

func (o *faultsPlan) render(path string, e *env) error {
	res, err := faults.Load(path)
	if err != nil {
		return err
	}
	return e.publish(res.Write, res.Checks, faults.ReportFile)
}
