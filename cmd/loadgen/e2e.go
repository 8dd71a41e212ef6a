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
		name:    "e2e",
		summary: "produce and consume at once: ack latency and end-to-end latency (produce to consume)",
		run:     runE2E,
	})
}

func runE2E(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var p load.ProduceConfig
	var cc load.ConsumeConfig
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	produceFlags(fs, &p)
	fs.DurationVar(&cc.Idle, "idle", 0, "give up when the consumer gets nothing for this long (0: 30s)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if p.RecordBytes < load.StampBytes {
		return usageErr("-record-size must be at least %d to carry the send time", load.StampBytes)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if err := ensureTopic(ctx, &c, cl); err != nil {
		return err
	}
	p.Client, p.Topic = cl, c.topic
	cc.Client = cl
	var finish func()
	p.Progress, finish = bar(c.progress, stderr, "e2e", p.Records)
	res, err := load.EndToEnd(ctx, p, cc)
	finish()
	printProduce(stdout, res.Produce)
	printConsume(stdout, res.Consume, true)
	if jerr := writeJSON(stdout, c.jsonOut, struct {
		Config load.ProduceConfig  `json:"config"`
		Result load.EndToEndResult `json:"result"`
	}{p, res}); jerr != nil {
		return fmt.Errorf("write json: %w", jerr)
	}
	if err != nil {
		return err
	}
	if res.Produce.Errors > 0 {
		return fmt.Errorf("%d records failed: %s", res.Produce.Errors, res.Produce.FirstError)
	}
	return nil
}
