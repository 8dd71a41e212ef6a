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
		name:    "consume",
		summary: "consume a topic from the start (-from start) or only new records (-from end)",
		run:     runConsume,
	})
}

func runConsume(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var c common
	var cc load.ConsumeConfig
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	fs.Int64Var(&cc.Records, "records", 1_000_000, "stop after this many records (0: -duration or interrupt)")
	fs.DurationVar(&cc.Duration, "duration", 0, "stop after this long")
	fs.DurationVar(&cc.Idle, "idle", 0, "give up when no record arrives for this long (0: 30s)")
	from := fs.String("from", "start", "where to begin: start or end")
	if err := parse(fs, args); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	cc.Client, cc.Topic = cl, c.topic
	switch *from {
	case "start":
	case "end":
		if cc.From, err = load.EndOffsets(ctx, cl, c.topic); err != nil {
			return err
		}
	default:
		return usageErr("-from %q: want start or end", *from)
	}
	var finish func()
	cc.Progress, finish = bar(c.progress, stderr, "consume", cc.Records)
	res, err := load.Consume(ctx, cc)
	finish()
	printConsume(stdout, res, *from == "end")
	if jerr := writeJSON(stdout, c.jsonOut, struct {
		Config load.ConsumeConfig `json:"config"`
		Result load.ConsumeResult `json:"result"`
	}{cc, res}); jerr != nil {
		return fmt.Errorf("write json: %w", jerr)
	}
	return err
}
