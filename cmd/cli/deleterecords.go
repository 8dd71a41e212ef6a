package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	register(command{
		name:    "delete-records",
		summary: "delete-records TOPIC -offset N [-partition P]: delete the records before N (-1: the high watermark)",
		run:     runDeleteRecords,
	})
}

// runDeleteRecords is Kafka's kafka-delete-records: it moves the log start
// of one partition, or of every partition of the topic, to -offset (-1:
// the high watermark, that is everything readable) through DeleteRecords
// at each partition's leader, and prints the low watermark each answers:
// the new log start, which a broker that keeps whole batches may put
// below the offset asked for. Any partition's error fails the command
// after the table.
func runDeleteRecords(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("delete-records", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	offset := fs.Int64("offset", -2, "delete the records before this offset (-1: the high watermark); required")
	partition := fs.Int("partition", -1, "the partition (-1: every partition of the topic)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageErr("delete-records needs exactly one TOPIC, got %q", pos)
	case *offset < -1:
		return usageErr("delete-records needs -offset N (N >= 0, or -1 for the high watermark)")
	}
	topic := pos[0]
	adm, ctx, done, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	parts, err := topicPartitions(ctx, adm, topic, int32(*partition))
	if err != nil {
		return fmt.Errorf("delete records of %s: %w", topic, err)
	}
	var os kadm.Offsets
	for _, p := range parts {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: *offset})
	}
	rs, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		return fmt.Errorf("delete records of %s: %w", topic, err)
	}
	return printDeleted(e, rs, topic, parts)
}

// topicPartitions is the partitions of topic a command acts on: p alone,
// or every one when p is -1.
func topicPartitions(ctx context.Context, adm *kadm.Client, topic string, p int32) ([]int32, error) {
	if p >= 0 {
		return []int32{p}, nil
	}
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := topics[topic]
	if !ok {
		return nil, errors.New("not in the metadata response")
	}
	if td.Err != nil {
		return nil, td.Err
	}
	var out []int32
	for _, pd := range td.Partitions.Sorted() {
		out = append(out, pd.Partition)
	}
	return out, nil
}

// printDeleted prints one line per partition, its low watermark or its
// error, and returns the first error.
func printDeleted(e *env, rs kadm.DeleteRecordsResponses, topic string, parts []int32) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLOW-WATERMARK")
	var first error
	for _, p := range parts {
		r, ok := rs.Lookup(topic, p)
		switch {
		case !ok:
			r.Err = errors.New("no answer")
			fallthrough
		case r.Err != nil:
			fmt.Fprintf(tw, "%d\terror: %v\n", p, r.Err)
			if first == nil {
				first = fmt.Errorf("delete records of %s/%d: %w", topic, p, r.Err)
			}
		default:
			fmt.Fprintf(tw, "%d\t%d\n", p, r.LowWatermark)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return first
}
