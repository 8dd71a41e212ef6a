package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/clusterbench"
	"github.com/minikafka/minikafka/broker/harness"
)

func init() {
	register(profile{
		name:    "cluster",
		summary: "a three-broker cluster per engine: controller failover, broker fencing, topic creation until served, restart at 1,000 topics",
		writes:  "results/cluster.md, cluster.json and cluster-topics.png",
		flags:   clusterFlags,
	})
}

// clusterPlan is the cluster profile.
type clusterPlan struct {
	engines      string
	scaleEngines string
	brokerBin    string
	brokerArgs   string
	quick        bool
	// topicParts, scaleParts and scaleRF are converted into cfg once
	// parsed.
	topicParts, scaleParts, scaleRF int
	cfg                             clusterbench.Config
}

func clusterFlags(fs *flag.FlagSet) plan {
	o := &clusterPlan{}
	fs.StringVar(&o.engines, "engines", "segment,pebble,badger", "engines of the fault and topic-creation measurements")
	fs.StringVar(&o.scaleEngines, "scale-engines", "segment", "engines of the restart at scale")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&o.cfg.Sync, "sync", "always", "brokers' -sync policy")
	fs.IntVar(&o.cfg.Kills, "kills", clusterbench.DefaultKills, "kills of the active controller, and of another broker, per engine")
	fs.IntVar(&o.cfg.Topics, "topics", clusterbench.DefaultTopics, "topics created one at a time on the first engine of -engines")
	fs.IntVar(&o.cfg.OtherTopics, "other-topics", clusterbench.DefaultOtherTopics, "topics created one at a time on each other engine")
	fs.IntVar(&o.topicParts, "topic-partitions", clusterbench.DefaultTopicPartitions, "partitions of each created topic")
	fs.IntVar(&o.cfg.ScaleTopics, "scale-topics", clusterbench.DefaultScaleTopics, "topics of the restart at scale")
	fs.IntVar(&o.scaleParts, "scale-partitions", clusterbench.DefaultScalePartitions, "partitions of each topic of the restart at scale")
	fs.IntVar(&o.scaleRF, "scale-rf", clusterbench.DefaultScaleRF, "replication factor of the restart at scale's topics")
	fs.IntVar(&o.cfg.Restarts, "restarts", clusterbench.DefaultRestarts, "restarts at scale per engine")
	fs.BoolVar(&o.quick, "quick", false, "smoke run: segment only, 3 kills, 30 topics, 100 topics at scale, 2 restarts (explicit flags win)")
	return o
}

func (o *clusterPlan) applyQuick(e *env) {
	if !o.quick {
		return
	}
	quick := map[string]func(){
		"engines":      func() { o.engines = "segment" },
		"kills":        func() { o.cfg.Kills = 3 },
		"topics":       func() { o.cfg.Topics = 30 },
		"other-topics": func() { o.cfg.OtherTopics = 10 },
		"scale-topics": func() { o.cfg.ScaleTopics = 100 },
		"restarts":     func() { o.cfg.Restarts = 2 },
	}
	for name, set := range quick {
		if !e.given[name] {
			set()
		}
	}
}

func (o *clusterPlan) measure(ctx context.Context, e *env) error {
	o.applyQuick(e)
	o.cfg.TopicPartitions, o.cfg.ScalePartitions, o.cfg.ScaleRF = int32(o.topicParts), int32(o.scaleParts), int16(o.scaleRF)
	o.cfg.Engines, o.cfg.ScaleEngines = bench.SplitList(o.engines), bench.SplitList(o.scaleEngines)
	if len(o.cfg.Engines)+len(o.cfg.ScaleEngines) == 0 {
		return usageErr("nothing to measure: -engines and -scale-engines are empty")
	}
	dir, logs, bin, err := e.brokerProcesses(ctx, o.brokerBin)
	if err != nil {
		return err
	}
	o.cfg.Bin, o.cfg.Args, o.cfg.Dir, o.cfg.Command = bin, strings.Fields(o.brokerArgs), dir, e.command
	o.cfg.Log, o.cfg.ServerLog = e.stderr, logs
	o.cfg.Setup = []string{
		fmt.Sprintf("brokers: `broker %s` as child processes (built from ./cmd/broker), every one a controller voter, their output in a log beside the data",
			strings.Join(append(harness.ClusterArgs("ENGINE", 0, "DIR", "ADDR", "CONTROLLER_ADDR", "1@…,2@…,3@…", o.cfg.Sync), o.cfg.Args...), " ")),
		"clients: franz-go in the benchmark process (kadm for admin requests, direct requests to one broker for the probes)",
	}
	res, err := clusterbench.Run(ctx, o.cfg)
	if res != nil {
		if werr := writeCluster(res, e); werr != nil {
			return werr
		}
	}
	return err
}

func writeCluster(res *clusterbench.Result, e *env) error {
	return e.publish(res.Write, res.Checks, clusterbench.ReportFile)
}

func (o *clusterPlan) render(path string, e *env) error {
	res, err := clusterbench.Load(path)
	if err != nil {
		return err
	}
	return writeCluster(res, e)
}
