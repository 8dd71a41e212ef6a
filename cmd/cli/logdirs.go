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
		name:    "log-dirs",
		summary: "log-dirs [TOPIC...]: each broker's replicas with their size in bytes and offset lag",
		run:     runLogDirs,
	})
}

// runLogDirs is Kafka's kafka-log-dirs --describe: every broker describes
// its log directories (DescribeLogDirs), and each replica they hold is one
// line: broker, directory, partition, size in bytes, offset lag (0 on a
// leader; on a follower how far its log end is behind the leader's high
// watermark). TOPIC arguments keep only those topics. A broker's error,
// or a directory's, fails the command after the table.
func runLogDirs(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("log-dirs", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	topics, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	adm, ctx, done, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	var set kadm.TopicsSet
	if len(topics) > 0 {
		listed, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return fmt.Errorf("log dirs: %w", err)
		}
		for _, t := range topics {
			td, ok := listed[t]
			if !ok || td.Err != nil {
				return fmt.Errorf("log dirs of %s: %w", t, orMissing(td.Err))
			}
			for _, pd := range td.Partitions.Sorted() {
				set.Add(t, pd.Partition)
			}
		}
	}
	all, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil && len(all) == 0 {
		return fmt.Errorf("log dirs: %w", err)
	}
	return printLogDirs(e, all, err)
}

func orMissing(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("not in the metadata response")
}

// printLogDirs prints one line per replica, sorted by broker, directory,
// topic and partition, and returns the first error.
func printLogDirs(e *env, all kadm.DescribedAllLogDirs, first error) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tDIR\tTOPIC\tPARTITION\tSIZE\tLAG")
	for _, d := range all.Sorted() {
		if d.Err != nil {
			fmt.Fprintf(tw, "%d\t%s\terror: %v\t\t\t\n", d.Broker, d.Dir, d.Err)
			if first == nil {
				first = fmt.Errorf("log dir %s of broker %d: %w", d.Dir, d.Broker, d.Err)
			}
			continue
		}
		for _, p := range d.Topics.Sorted() {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\n", p.Broker, p.Dir, p.Topic, p.Partition, p.Size, p.OffsetLag)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return first
}
