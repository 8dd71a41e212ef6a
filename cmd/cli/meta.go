package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	register(command{
		name:    "meta",
		summary: "meta: cluster id, brokers, controller and topics with their partition counts",
		run:     runMeta,
	})
}

func runMeta(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("meta", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("meta takes no arguments, got %q", pos)
	}
	cl, ctx, done, err := e.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	m, err := kadm.NewClient(cl).Metadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	m.Topics.FilterInternal()
	return printMeta(e, m)
}

func printMeta(e *env, m kadm.Metadata) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cluster\t%s\n", m.Cluster)
	fmt.Fprintf(tw, "controller\t%d\n", m.Controller)
	fmt.Fprintln(tw, "\nBROKER\tHOST:PORT\tRACK")
	for _, b := range m.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "%d\t%s:%d\t%s\n", b.NodeID, b.Host, b.Port, rack)
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITIONS\tLEADERS\tERROR")
	for _, td := range m.Topics.Sorted() {
		leaders := map[int32]bool{}
		for _, p := range td.Partitions {
			leaders[p.Leader] = true
		}
		errText := ""
		if td.Err != nil {
			errText = td.Err.Error()
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", td.Topic, len(td.Partitions), len(leaders), errText)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
