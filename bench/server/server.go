// Package server starts the servers the benchmarks measure, each as a child
// process on its own data directory (bench/proc), so that its CPU, memory
// and I/O are its own and it can be killed: mini-kafka's broker over one
// engine (cmd/broker), a cluster of them (Cluster: every broker a
// controller voter, killed, stopped and started again by node id),
// franz-go's in-memory kfake (the serve-kfake command of cmd/bench,
// ServeKfake here), and NATS JetStream (the peers command of the
// bench/peers module).
package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minikafka/minikafka/bench/proc"
)

// Server is a running server under test.
type Server struct {
	*proc.Child
	// MetricsURL is the broker's /metrics, or "" for servers without it.
	MetricsURL string
}

// Start starts a server on dir under a sync policy ("always", "interval"
// or "never"; servers that have none ignore it). Starting again on the
// same dir is a restart.
type Start func(ctx context.Context, dir, sync string) (*Server, error)

// DefaultSync is the sync policy a benchmark's servers run under when its
// config names none: cmd/broker's default, every write on disk before it
// is acknowledged.
const DefaultSync = "always"

// Failing is a Start that always fails with err: a target whose binary did
// not build fails its cells, not the run.
func Failing(err error) Start {
	return func(context.Context, string, string) (*Server, error) { return nil, err }
}

// child makes a Start of a function that says how to run the process.
func child(cfg func(dir, sync string) (proc.Config, string, error)) Start {
	return func(ctx context.Context, dir, sync string) (*Server, error) {
		c, metricsURL, err := cfg(dir, sync)
		if err != nil {
			return nil, err
		}
		ch, err := proc.Start(ctx, c)
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
func Broker(bin, engine string, partitions int32, extra []string, logs io.Writer) Start {
	return child(func(dir, sync string) (proc.Config, string, error) {
		addr, err := proc.FreeAddr()
		if err != nil {
			return proc.Config{}, "", err
		}
		maddr, err := proc.FreeAddr()
		if err != nil {
			return proc.Config{}, "", err
		}
		args := append(BrokerArgs(engine, dir, addr, maddr, sync, partitions), extra...)
		return proc.Config{Path: bin, Args: args, Addr: addr, Log: logs, Ready: 2 * time.Minute},
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
func Kfake(self string, partitions int32, logs io.Writer) Start {
	return child(func(string, string) (proc.Config, string, error) {
		return proc.Config{Path: self, Args: KfakeArgs(partitions), Log: logs}, "", nil
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
func NATS(bin string, syncInterval time.Duration, logs io.Writer) Start {
	return child(func(dir, sync string) (proc.Config, string, error) {
		return proc.Config{Path: bin, Args: []string{"nats-serve", "-dir", dir, "-sync", sync,
			"-sync-interval", syncInterval.String()}, Log: logs, Ready: time.Minute}, "", nil
	})
}
