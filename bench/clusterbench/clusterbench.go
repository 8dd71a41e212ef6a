// Package clusterbench measures how fast a three-broker mini-kafka cluster
// (every broker a controller voter, each a cmd/broker child process on
// loopback ports, bench/harness.Cluster) gets over its faults and its
// chores: a kill -9 of the active controller until CreateTopics succeeds
// again, a kill -9 of another broker until Metadata no longer lists it
// nor any leadership on it, a new topic until every broker it is placed on
// lists it with a leader and a produce to each partition is acknowledged,
// and a broker holding thousands of partitions restarted until it serves.
// It is the cluster
// profile of cmd/bench, which writes results/cluster.md and cluster.json.
//
// Every figure is timed by the benchmark process from just before it acts
// (the signal, the request, the exec) to the first answer that shows the
// outcome, polling the brokers directly (bench/harness.Direct) a few
// milliseconds apart.
package clusterbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/harness"
)

// Workloads of a cell.
const (
	ControllerFailover = "controller-failover"
	BrokerFailure      = "broker-failure"
	TopicCreation      = "topic-creation"
	RestartAtScale     = "restart-at-scale"
)

// The targets.
const (
	TargetControllerFailover = time.Second            // median, kill -9 of the active controller to CreateTopics accepted
	TargetBrokerFailure      = time.Second            // median, kill -9 to fenced with its leaderships moved
	TargetTopicCreation      = 100 * time.Millisecond // p99, CreateTopics to served by every replica
	TargetRestart            = 2 * time.Second        // median, process start to serving at scale
	// KafkaSessionTimeout is broker.session.timeout.ms's default in
	// Kafka: how long a dead broker stays registered there without a
	// heartbeat connection that closes.
	KafkaSessionTimeout = 9 * time.Second
)

// Defaults of the committed run.
const (
	DefaultBrokers         = 3
	DefaultKills           = 10
	DefaultTopics          = 200
	DefaultOtherTopics     = 40
	DefaultTopicPartitions = 3
	DefaultScaleTopics     = 1000
	DefaultScalePartitions = 10
	DefaultScaleRF         = 1
	DefaultRestarts        = 3
)

// Config is one run of the cluster profile.
type Config struct {
	// Engines get the fault and topic measurements; ScaleEngines the
	// restart at scale.
	Engines      []string
	ScaleEngines []string
	bench.Servers

	Kills int
	// Topics are created on the first engine, OtherTopics on each other
	// one (each topic takes about a second there: fewer keep the run
	// short).
	Topics          int
	OtherTopics     int
	TopicPartitions int32
	ScaleTopics     int
	ScalePartitions int32
	ScaleRF         int16
	Restarts        int
}

// Rep is one measurement: one fault, one topic or one restart.
type Rep struct {
	// Seconds is the figure: from the act (the signal, the request, the
	// exec) to the outcome its workload waits for.
	Seconds float64 `json:"seconds"`
	// Node is the broker killed or restarted.
	Node int32 `json:"node,omitempty"`
	// Attempts counts the CreateTopics sent until one succeeded
	// (controller failover).
	Attempts int `json:"attempts,omitempty"`
	// Moved counts the leaderships the killed broker had (broker
	// failure); Partitions those the restarted broker leads.
	Moved      int `json:"moved,omitempty"`
	Partitions int `json:"partitions,omitempty"`
	// Phases, from the same start as Seconds: CreateTopics answered
	// (topic creation); listed with leaders by every broker the topic is
	// placed on, or listed unfenced by itself (restart); a produce to each
	// partition with acks=1 acknowledged (topic creation; the figure is
	// acks=all).
	Created   float64 `json:"created_s,omitempty"`
	Listed    float64 `json:"listed_s,omitempty"`
	LeaderAck float64 `json:"leader_ack_s,omitempty"`
	// Shutdown is SIGTERM to exit, the controlled shutdown before a
	// restart; OpenFiles the restarted broker's file descriptors once it
	// serves.
	Shutdown  float64 `json:"shutdown_s,omitempty"`
	OpenFiles int     `json:"open_files,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Failure implements bench.Rep.
func (r Rep) Failure() string { return r.Error }

func failed(err error) Rep { return Rep{Error: err.Error()} }

// Figures of a repetition, NaN for a failed one or one without it.
var (
	Seconds   = bench.Figure(func(r Rep) float64 { return r.Seconds })
	Created   = bench.Figure(func(r Rep) float64 { return r.Created })
	Listed    = bench.Figure(func(r Rep) float64 { return r.Listed })
	LeaderAck = bench.Figure(func(r Rep) float64 { return r.LeaderAck })
	Shutdown  = bench.Figure(func(r Rep) float64 { return r.Shutdown })
	OpenFiles = bench.Figure(func(r Rep) float64 { return float64(r.OpenFiles) })
	Led       = bench.Figure(func(r Rep) float64 { return float64(r.Partitions) })
	Moved     = bench.Figure(func(r Rep) float64 { return float64(r.Moved) })
	Attempts  = bench.Figure(func(r Rep) float64 { return float64(r.Attempts) })
)

// Cell is one engine under one workload.
type Cell = bench.Cell[Rep]

// Result is everything a run measured.
type Result struct {
	bench.Facts
	Config struct {
		Brokers         int           `json:"brokers"`
		Sync            string        `json:"sync"`
		Args            []string      `json:"args,omitempty"`
		Kills           int           `json:"kills"`
		Topics          int           `json:"topics"`
		OtherTopics     int           `json:"other_topics,omitempty"`
		TopicPartitions int32         `json:"topic_partitions"`
		ScaleTopics     int           `json:"scale_topics"`
		ScalePartitions int32         `json:"scale_partitions"`
		ScaleRF         int16         `json:"scale_rf"`
		Restarts        int           `json:"restarts"`
		Engines         []string      `json:"engines"`
		ScaleEngines    []string      `json:"scale_engines"`
		SessionTimeout  time.Duration `json:"session_timeout_ns"`
	} `json:"config"`
	Cells []*Cell `json:"cells"`
	// ScaleSetup is how long creating the topics of the restart at scale
	// took, per engine, in seconds.
	ScaleSetup map[string]float64 `json:"scale_setup_s,omitempty"`
	Checks     []bench.Check      `json:"checks"`
}

// Cell finds engine's cell under workload, or nil.
func (r *Result) Cell(engine, workload string) *Cell {
	return bench.FindCell(r.Cells, engine, workload)
}

func (r *Result) add(engine, workload string, rep Rep) {
	bench.AddRep(&r.Cells, engine, workload, topology(r.Config.Brokers, workload), rep)
}

func topology(brokers int, workload string) bench.Topology {
	switch workload {
	case ControllerFailover:
		return bench.Topology{Brokers: brokers, ReplicationFactor: 2, Faults: []string{"kill-controller"}}
	case BrokerFailure:
		return bench.Topology{Brokers: brokers, ReplicationFactor: 3, Faults: []string{"kill-broker"}}
	case RestartAtScale:
		return bench.Topology{Brokers: brokers, ReplicationFactor: 1, Faults: []string{"stop-broker", "start-broker"}}
	}
	return bench.Topology{Brokers: brokers, ReplicationFactor: 3}
}

// SessionTimeout is the brokers' -broker-session-timeout when Args do not
// set it: cmd/broker's default.
const SessionTimeout = 3 * time.Second

func (c *Config) defaults() {
	bench.Default(&c.Kills, DefaultKills)
	bench.Default(&c.Topics, DefaultTopics)
	bench.Default(&c.OtherTopics, DefaultOtherTopics)
	bench.Default(&c.TopicPartitions, DefaultTopicPartitions)
	bench.Default(&c.ScaleTopics, DefaultScaleTopics)
	bench.Default(&c.ScalePartitions, DefaultScalePartitions)
	bench.Default(&c.ScaleRF, DefaultScaleRF)
	bench.Default(&c.Restarts, DefaultRestarts)
	c.Servers.Defaults()
}

// Run measures every engine in turn, then the restart at scale. A measurement that fails is recorded in its cell
// and the run goes on; the error is for an interrupted run (the result
// then holds what finished).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	facts, err := cfg.Begin()
	if err != nil {
		return nil, fmt.Errorf("clusterbench: %w", err)
	}
	res := &Result{Facts: facts}
	k := &res.Config
	k.Brokers, k.Sync, k.Args = DefaultBrokers, cfg.Sync, cfg.Args
	k.Kills, k.Topics, k.OtherTopics, k.TopicPartitions = cfg.Kills, cfg.Topics, cfg.OtherTopics, cfg.TopicPartitions
	k.ScaleTopics, k.ScalePartitions, k.ScaleRF, k.Restarts = cfg.ScaleTopics, cfg.ScalePartitions, cfg.ScaleRF, cfg.Restarts
	k.Engines, k.ScaleEngines = cfg.Engines, cfg.ScaleEngines
	k.SessionTimeout = sessionTimeout(cfg.Args)
	err = measureAll(ctx, &cfg, res)
	res.End()
	res.Checks = res.Judge()
	return res, err
}

func measureAll(ctx context.Context, cfg *Config, res *Result) error {
	for i, e := range cfg.Engines {
		if err := ctx.Err(); err != nil {
			return err
		}
		topics := cfg.Topics
		if i > 0 {
			topics = cfg.OtherTopics
		}
		fmt.Fprintf(cfg.Log, "cluster: %s: faults and topic creation\n", e)
		measureEngine(ctx, cfg, res, e, topics)
	}
	for _, e := range cfg.ScaleEngines {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Log, "cluster: %s: restart at scale (%d topics x %d partitions, RF %d)\n", e, cfg.ScaleTopics, cfg.ScalePartitions, cfg.ScaleRF)
		measureScale(ctx, cfg, res, e)
	}
	return ctx.Err()
}

// startCluster starts a fresh cluster of engine under dir, named for what
// it is for.
func startCluster(ctx context.Context, cfg *Config, engine, name string) (*harness.Cluster, string, error) {
	dir := filepath.Join(cfg.Dir, engine+"-"+name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := harness.StartCluster(sctx, harness.ClusterConfig{Bin: cfg.Bin, Engine: engine, Brokers: DefaultBrokers,
		Dir: dir, Sync: cfg.Sync, Args: cfg.Args, Log: cfg.ServerLog})
	return c, dir, err
}

// measureEngine takes the fault and topic measurements on one cluster.
func measureEngine(ctx context.Context, cfg *Config, res *Result, engine string, topics int) {
	c, dir, err := startCluster(ctx, cfg, engine, "faults")
	if err != nil {
		for _, w := range []string{ControllerFailover, BrokerFailure, TopicCreation} {
			res.add(engine, w, failed(fmt.Errorf("start: %w", err)))
		}
		return
	}
	defer os.RemoveAll(dir)
	defer c.Close()
	for i := range cfg.Kills {
		r := controllerFailover(ctx, c, i)
		fmt.Fprintf(cfg.Log, "  controller failover %d: %s\n", i+1, say(r))
		res.add(engine, ControllerFailover, r)
	}
	for i := range cfg.Kills {
		r := brokerFailure(ctx, c, i)
		fmt.Fprintf(cfg.Log, "  broker failure %d: %s\n", i+1, say(r))
		res.add(engine, BrokerFailure, r)
	}
	reps := topicCreation(ctx, c, topics, cfg.TopicPartitions)
	for _, r := range reps {
		res.add(engine, TopicCreation, r)
	}
	q := res.Cell(engine, TopicCreation).Spread(Seconds)
	fmt.Fprintf(cfg.Log, "  topic creation: %d topics, median %s, max %s\n", q.N, bench.Millis(q.Median), bench.Millis(q.Max))
}

func say(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	return fmt.Sprintf("node %d, %s", r.Node, bench.Millis(r.Seconds))
}

// sessionTimeout is -broker-session-timeout from args, or the default.
func sessionTimeout(args []string) time.Duration {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "broker-session-timeout" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if d, err := time.ParseDuration(value); err == nil {
			return d
		}
	}
	return SessionTimeout
}

// since is the time from start, in seconds.
func since(start time.Time) float64 { return time.Since(start).Seconds() }
