package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/bench/replbench"
	"github.com/minikafka/minikafka/broker/harness"
)

func init() {
	register(profile{
		name:    "replication",
		summary: "the same ISR replication over each engine: RF 3 against RF 1 throughput, acks=all latency at half the peak, leader kill and stop under load with nothing lost, a follower catching up",
		writes:  "results/replication.md, replication.json and replication-kill.png",
		flags:   replicationFlags,
	})
}

// replicationPlan is the replication profile.
type replicationPlan struct {
	engines    string
	brokerBin  string
	brokerArgs string
	partitions int
	quick      bool
	cfg        replbench.Config
}

func replicationFlags(fs *flag.FlagSet) plan {
	o := &replicationPlan{cfg: replbench.Config{Ingest: logbench.Default()}}
	fs.StringVar(&o.engines, "engines", "segment,pebble,badger", "engines to measure, one after the other")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&o.cfg.Sync, "sync", "always", "brokers' -sync policy")
	fs.IntVar(&o.cfg.RecordBytes, "record-size", replbench.DefaultRecordBytes, "value bytes per record")
	fs.IntVar(&o.partitions, "partitions", replbench.DefaultPartitions, "partitions of the throughput and catch-up topics")
	fs.DurationVar(&o.cfg.Run, "run", replbench.DefaultRun, "length of each throughput and latency run")
	fs.IntVar(&o.cfg.Reps, "reps", replbench.DefaultReps, "pairs of throughput runs (RF 1, RF 3) per engine")
	fs.IntVar(&o.cfg.Kills, "kills", replbench.DefaultKills, "kill -9 rounds of a leader per engine")
	fs.IntVar(&o.cfg.Stops, "stops", replbench.DefaultStops, "SIGTERM rounds of a leader per engine")
	fs.Float64Var(&o.cfg.FaultRate, "fault-rate", replbench.DefaultFaultRate, "records per second of the tracked producer during the kills and stops")
	fs.Int64Var(&o.cfg.CatchUpBytes, "catch-up-bytes", replbench.DefaultCatchUpBytes, "bytes produced while a follower is down")
	fs.Int64Var(&o.cfg.Ingest.Records, "ingest-records", o.cfg.Ingest.Records, "records of each bulk ingest the catch-up is compared with")
	fs.IntVar(&o.cfg.IngestReps, "ingest-reps", replbench.DefaultIngestReps, "bulk ingests per engine")
	fs.BoolVar(&o.quick, "quick", false, "smoke run: segment only, 3 s runs, 1 pair, 3 kills, 2 stops, a 64 MiB backlog, one ingest of 100k records (explicit flags win)")
	return o
}

func (o *replicationPlan) applyQuick(e *env) {
	if !o.quick {
		return
	}
	quick := map[string]func(){
		"engines":        func() { o.engines = "segment" },
		"run":            func() { o.cfg.Run = 3 * time.Second },
		"reps":           func() { o.cfg.Reps = 1 },
		"kills":          func() { o.cfg.Kills = 3 },
		"stops":          func() { o.cfg.Stops = 2 },
		"catch-up-bytes": func() { o.cfg.CatchUpBytes = 64 << 20 },
		"ingest-records": func() { o.cfg.Ingest.Records = 100_000 },
		"ingest-reps":    func() { o.cfg.IngestReps = 1 },
	}
	for name, set := range quick {
		if !e.given[name] {
			set()
		}
	}
}

func (o *replicationPlan) measure(ctx context.Context, e *env) error {
	o.applyQuick(e)
	o.cfg.Engines, o.cfg.Partitions = bench.SplitList(o.engines), int32(o.partitions)
	if len(o.cfg.Engines) == 0 {
		return usageErr("-engines is empty")
	}
	dir, logs, bin, err := e.brokerProcesses(ctx, o.brokerBin)
	if err != nil {
		return err
	}
	o.cfg.Bin, o.cfg.Args, o.cfg.Dir, o.cfg.Command = bin, strings.Fields(o.brokerArgs), dir, e.command
	o.cfg.Log, o.cfg.ServerLog = e.stderr, logs
	o.cfg.Setup = []string{
		fmt.Sprintf("cluster: `broker %s` as child processes (built from ./cmd/broker), every one a controller voter",
			strings.Join(append(append(harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…", o.cfg.Sync),
				"-min-insync-replicas", fmt.Sprint(replbench.MinISR)), o.cfg.Args...), " ")),
		fmt.Sprintf("single broker: `broker %s` as a child process (no cluster flags: a one-node cluster)",
			strings.Join(append(harness.BrokerArgs("ENGINE", "DIR", "ADDR", "METRICS_ADDR", o.cfg.Sync, o.cfg.Partitions), o.cfg.Args...), " ")),
		"clients: franz-go in the benchmark process; the bulk ingest runs in the benchmark process too, on the same disk",
	}
	res, err := replbench.Run(ctx, o.cfg)
	if res != nil {
		if werr := writeReplication(res, e); werr != nil {
			return werr
		}
	}
	return err
}

func writeReplication(res *replbench.Result, e *env) error {
	return e.publish(res.Write, res.Checks, replbench.ReportFile)
}

func (o *replicationPlan) render(path string, e *env) error {
	res, err := replbench.Load(path)
	if err != nil {
		return err
	}
	return writeReplication(res, e)
}
