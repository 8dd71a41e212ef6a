package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kfake"
)

// serveKfakeCmd is the hidden subcommand by which the benchmark runs kfake
// as a child process of its own binary, like the broker, so that both are
// measured the same way (own process, own CPU and memory).
const serveKfakeCmd = "serve-kfake"

func serveKfake(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(serveKfakeCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	partitions := fs.Int("partitions", 8, "default partitions of auto-created topics")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
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
