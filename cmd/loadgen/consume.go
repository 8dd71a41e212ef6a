package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/minikafka/minikafka/bench/load"
)

func init() {
	register(command{
		name:    "consume",
		summary: "consume a topic from the start (-from start) or only new records (-from end)",
		run:     runConsume,
	})
}

func int32Flag(dst *int32) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || v <= 0 {
			return fmt.Errorf("want a positive 32-bit integer, got %q", s)
		}
		*dst = int32(v)
		return nil
	}
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
	fs.Func("fetch-max-bytes", "fetch response limit (default: franz-go's)", int32Flag(&cc.FetchMaxBytes))
	fs.Func("fetch-max-partition-bytes", "per-partition fetch limit (default: franz-go's)", int32Flag(&cc.FetchMaxPartitionBytes))
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
