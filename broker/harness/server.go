// Package harness starts the brokers and clusters that tests, interop
// suites and benchmarks run against, and owns what they share: brokers in
// this process (ServeInProcess, ListenCluster for a quorum of them); the
// one build of cmd/broker (BuildBroker, RunWithBroker), child processes
// and their /proc figures (StartChild), free ports, the servers a
// benchmark measures (Broker, Kfake, NATS: a Starter each), clusters of
// cmd/broker processes on loopback ports or in network namespaces
// (StartCluster, netlab), topic creation and the waits on a cluster's
// metadata (WaitBrokers, WaitLeaders, WaitISR, WaitFenced, WaitDeleted),
// and direct requests to one broker (Dial). It imports no testing
// package: broker/brokertest wraps it with a test's lifetime (and
// interop/interoptest builds on brokertest), and cmd/bench uses it as it
// is.
//
// kfake runs as a child process of the benchmark's own binary (the
// serve-kfake subcommand, ServeKfake here) and NATS JetStream as the
// bench/peers module's command, so that every server is measured the same
// way.

package harness

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Server is a running server under test.
type Server struct {
	*Child
	// MetricsURL is the broker's /metrics, or "" for servers without it.
	MetricsURL string
}

// Starter starts a server on dir under a sync policy ("always", "interval"
// or "never"; servers that have none ignore it). Starting again on the
// same dir is a restart.
type Starter func(ctx context.Context, dir, sync string) (*Server, error)

// DefaultSync is the sync policy a benchmark's servers run under when its
// config names none: cmd/broker's default, every write on disk before it
// is acknowledged.
const DefaultSync = "always"

// Failing is a Starter that always fails with err: a target whose binary did
// not build fails its cells, not the run.
func Failing(err error) Starter {
	return func(context.Context, string, string) (*Server, error) { return nil, err }
}

// child makes a Starter of a function that says how to run the process.
func child(cfg func(dir, sync string) (ChildConfig, string, error)) Starter {
	return func(ctx context.Context, dir, sync string) (*Server, error) {
		c, metricsURL, err := cfg(dir, sync)
		if err != nil {
			return nil, err
		}
		ch, err := StartChild(ctx, c)
		if err != nil {
			return nil, err
		}
		return &Server{Child: ch, MetricsURL: metricsURL}, nil
	}
}

// BrokerArgs is the command line of mini-kafka's broker over an engine.
func BrokerArgs(engine, dir, addr, metricsAddr, sync string, partitions int32) []string {
	return []string{"-engine", engine, "-dir", dir, "-addr", addr, "-advertised-addr", addr,
		"-metrics-addr", metricsAddr, "-sync", sync, "-partitions", fmt.Sprint(partitions),
		"-log-level", "warn"}
}

// Broker starts bin (cmd/broker) over engine on free ports, with extra
// broker flags after the usual ones; its stderr goes to logs.
func Broker(bin, engine string, partitions int32, extra []string, logs io.Writer) Starter {
	return child(func(dir, sync string) (ChildConfig, string, error) {
		addr, err := FreeAddr()
		if err != nil {
			return ChildConfig{}, "", err
		}
		maddr, err := FreeAddr()
		if err != nil {
			return ChildConfig{}, "", err
		}
		args := append(BrokerArgs(engine, dir, addr, maddr, sync, partitions), extra...)
		return ChildConfig{Path: bin, Args: args, Addr: addr, Log: logs, Ready: 2 * time.Minute},
			"http://" + maddr + "/metrics", nil
	})
}

// ServeKfakeCmd is the subcommand by which a benchmark binary serves kfake
// as a child process of itself (see ServeKfake).
const ServeKfakeCmd = "serve-kfake"

// KfakeArgs is the command line that makes a binary calling ServeKfake for
// ServeKfakeCmd serve kfake.
func KfakeArgs(partitions int32) []string {
	return []string{ServeKfakeCmd, "-partitions", fmt.Sprint(partitions)}
}

// Kfake starts self (a binary that runs ServeKfake for ServeKfakeCmd) as
// kfake, one in-memory broker that never fsyncs.
func Kfake(self string, partitions int32, logs io.Writer) Starter {
	return child(func(string, string) (ChildConfig, string, error) {
		return ChildConfig{Path: self, Args: KfakeArgs(partitions), Log: logs}, "", nil
	})
}

// ServeKfake runs franz-go's kfake (one broker, topics auto-created) until
// ctx ends, printing its host:port as the first line of stdout. args are
// the flags after ServeKfakeCmd.
func ServeKfake(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(ServeKfakeCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: any free port)")
	partitions := fs.Int("partitions", 8, "default partitions of auto-created topics")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
	)
	if err != nil {
		return fmt.Errorf("kfake: %w", err)
	}
	defer c.Close()
	fmt.Fprintln(stdout, c.ListenAddrs()[0])
	<-ctx.Done()
	return nil
}

// NATS starts the peers command's embedded JetStream server on dir (file
// storage; sync=always is JetStream's sync_interval: always).
func NATS(bin string, syncInterval time.Duration, logs io.Writer) Starter {
	return child(func(dir, sync string) (ChildConfig, string, error) {
		return ChildConfig{Path: bin, Args: []string{"nats-serve", "-dir", dir, "-sync", sync,
			"-sync-interval", syncInterval.String()}, Log: logs, Ready: time.Minute}, "", nil
	})
}
