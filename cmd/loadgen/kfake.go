package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kfake"
)

func init() {
	register(command{
		name:    "serve-kfake",
		summary: "run franz-go's in-memory fake cluster (one broker) until interrupted; prints its host:port",
		hidden:  true,
		run:     runServeKfake,
	})
}

// runServeKfake is how the broker benchmark runs kfake as a child process,
// like our broker, so both are measured the same way (own process, own RSS).
func runServeKfake(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("serve-kfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: any free port)")
	partitions := fs.Int("partitions", 8, "default partitions for auto-created topics")
	if err := parse(fs, args); err != nil {
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
