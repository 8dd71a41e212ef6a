package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/brokerbench"
	"github.com/minikafka/minikafka/bench/server"
)

func init() {
	register(profile{
		name:    "broker",
		summary: "the broker over each durable engine against kfake with the same franz-go load, and its peak RSS",
		writes:  "results/broker.md and broker.json",
		flags:   brokerFlags,
	})
}

// brokerPlan is the broker profile (formerly `loadgen bench-broker`).
type brokerPlan struct {
	engines    string
	rssEngines string
	brokerBin  string
	brokerArgs string
	partitions int
	quick      bool
	// built marks brokerBin as built by another profile, not given.
	built bool
	cfg   brokerbench.Config
}

func brokerFlags(fs *flag.FlagSet) plan {
	f := &brokerPlan{}
	fs.StringVar(&f.engines, "engines", "segment,pebble,badger", "engines to measure against kfake")
	fs.StringVar(&f.rssEngines, "rss-engines", "segment", "engines for the peak-RSS run (-rss-records through each)")
	fs.StringVar(&f.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&f.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&f.cfg.Sync, "sync", "always", "broker -sync policy")
	fs.Int64Var(&f.cfg.Records, "records", brokerbench.DefaultRecords, "records per throughput repetition")
	fs.Int64Var(&f.cfg.RSSRecords, "rss-records", brokerbench.DefaultRSSRecords, "records through the broker in the peak-RSS run")
	fs.IntVar(&f.cfg.RecordBytes, "record-size", brokerbench.DefaultRecordBytes, "value bytes per record")
	fs.IntVar(&f.partitions, "partitions", brokerbench.DefaultPartitions, "partitions of the benchmark topic")
	fs.IntVar(&f.cfg.Reps, "reps", brokerbench.DefaultReps, "repetitions per server")
	fs.IntVar(&f.cfg.InFlight, "in-flight", 0, "producer records in flight (0: franz-go's default)")
	fs.BoolVar(&f.quick, "quick", false, "smoke run: 50k records, 100k for RSS, 1 repetition (explicit flags win)")
	return f
}

func (f *brokerPlan) measure(ctx context.Context, e *env) error {
	dir, err := e.dataDir()
	if err != nil {
		return err
	}
	cfg, err := f.config(ctx, e, dir)
	if err != nil {
		return err
	}
	res, err := brokerbench.Run(ctx, cfg)
	if res != nil {
		if werr := writeBroker(res, e); werr != nil {
			return werr
		}
	}
	return err
}

// config is the run the flags describe, its data under dir (the cluster
// profile runs it too).
func (f *brokerPlan) config(ctx context.Context, e *env, dir string) (brokerbench.Config, error) {
	f.cfg.Partitions = int32(f.partitions)
	if f.quick {
		if !e.given["records"] {
			f.cfg.Records = 50_000
		}
		if !e.given["rss-records"] {
			f.cfg.RSSRecords = 100_000
		}
		if !e.given["reps"] {
			f.cfg.Reps = 1
		}
	}
	me, err := self()
	if err != nil {
		return f.cfg, err
	}
	logs, err := e.serverLog(dir)
	if err != nil {
		return f.cfg, err
	}
	// A broker that does not build fails its cells, not the run: kfake's
	// figures are still worth a report.
	bin, buildErr := f.brokerBinary(ctx, e)
	f.cfg.Targets = []brokerbench.Target{{Name: "kfake", Reference: true, Start: server.Kfake(me, f.cfg.Partitions, logs)}}
	for _, name := range bench.SplitList(f.engines) {
		f.cfg.Targets = append(f.cfg.Targets, f.brokerTarget(bin, buildErr, name, logs))
	}
	for _, name := range bench.SplitList(f.rssEngines) {
		f.cfg.RSSTargets = append(f.cfg.RSSTargets, f.brokerTarget(bin, buildErr, name, logs))
	}
	f.cfg.Dir, f.cfg.Log, f.cfg.Command, f.cfg.Bar = dir, e.stderr, e.command, e.bar(false)
	desc := "broker (built from ./cmd/broker)"
	switch {
	case f.brokerBin != "" && !f.built:
		desc = f.brokerBin
	case buildErr != nil:
		desc = "broker (did not build)"
	}
	f.cfg.Setup = []string{
		"kfake: `bench serve-kfake` (this binary) as a child process (franz-go kfake, one broker, in memory, never fsyncs)",
		fmt.Sprintf("broker: `%s %s` as a child process, fresh for every engine and repetition", desc,
			strings.Join(append(server.BrokerArgs("ENGINE", "DIR", "ADDR", "METRICS_ADDR", f.cfg.Sync, f.cfg.Partitions), strings.Fields(f.brokerArgs)...), " ")),
		"client: franz-go in the benchmark process; the servers run in their own processes on the same machine",
	}
	return f.cfg, nil
}

func writeBroker(res *brokerbench.Result, e *env) error {
	return e.publish(res.Write, res.Checks, brokerbench.ReportFile)
}

// brokerBinary returns -broker-bin, or builds ./cmd/broker; nothing to
// build when no engine is measured.
func (f *brokerPlan) brokerBinary(ctx context.Context, e *env) (string, error) {
	if f.brokerBin != "" || len(bench.SplitList(f.engines))+len(bench.SplitList(f.rssEngines)) == 0 {
		return f.brokerBin, nil
	}
	return buildBroker(ctx, e)
}

// buildBroker builds ./cmd/broker into a temporary directory.
func buildBroker(ctx context.Context, e *env) (string, error) { return buildBrokerAt(ctx, e, "") }

func (f *brokerPlan) brokerTarget(bin string, buildErr error, engine string, logs io.Writer) brokerbench.Target {
	t := brokerbench.Target{Name: engine, Start: server.Failing(buildErr)}
	if buildErr == nil {
		t.Start = server.Broker(bin, engine, f.cfg.Partitions, strings.Fields(f.brokerArgs), logs)
	}
	return t
}

func (f *brokerPlan) render(path string, e *env) error {
	res, err := brokerbench.Load(path)
	if err != nil {
		return err
	}
	return writeBroker(res, e)
}
