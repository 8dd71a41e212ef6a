package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/minikafka/minikafka/bench/load"
)

func init() {
	register(command{
		name:    "produce",
		summary: "produce records, closed loop (-in-flight) or open loop (-rate); ack latency",
		run:     runProduce,
	})
}

// ensureTopic creates the topic unless -partitions is 0.
func ensureTopic(ctx context.Context, c *common, cl load.Client) error {
	if c.partitions <= 0 {
		return nil
	}
	return load.EnsureTopic(ctx, cl, c.topic, int32(c.partitions))
}

func runProduce(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var p load.ProduceConfig
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	produceFlags(fs, &p)
	if err := parse(fs, args); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if err := ensureTopic(ctx, &c, cl); err != nil {
		return err
	}
	p.Client, p.Topic = cl, c.topic
	var finish func()
	p.Progress, finish = bar(c.progress, stderr, "produce", p.Records)
	res, err := load.Produce(ctx, p)
	finish()
	if err != nil {
		return err
	}
	printProduce(stdout, res)
	if err := writeJSON(stdout, c.jsonOut, struct {
		Config load.ProduceConfig `json:"config"`
		Result load.ProduceResult `json:"result"`
	}{p, res}); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	if res.Errors > 0 {
		return fmt.Errorf("%d records failed: %s", res.Errors, res.FirstError)
	}
	return nil
}
