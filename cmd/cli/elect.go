package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() {
	register(command{
		name:    "elect-leaders",
		summary: "elect-leaders [-unclean] TOPIC [-partition P]: move leadership to the preferred replica, or elect an out-of-sync one",
		run:     runElectLeaders,
	})
}

// runElectLeaders is Kafka's kafka-leader-election: a preferred election
// (the first replica of the assignment leads again, if it is in sync) of
// one partition or of every partition of the topic, or with -unclean the
// election of any live replica for partitions that have no leader, which
// may lose acknowledged records. It prints each partition's outcome:
// elected, not needed (the partition already has the leader asked for,
// which is no failure), or the error, and fails after the table if any
// partition failed.
func runElectLeaders(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("elect-leaders", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	unclean := fs.Bool("unclean", false, "elect any live replica of a partition with no leader (may lose acknowledged records)")
	partition := fs.Int("partition", -1, "the partition (-1: every partition of the topic)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("elect-leaders needs exactly one TOPIC, got %q", pos)
	}
	topic := pos[0]
	adm, ctx, done, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	parts, err := topicPartitions(ctx, adm, topic, int32(*partition))
	if err != nil {
		return fmt.Errorf("elect leaders of %s: %w", topic, err)
	}
	how := kadm.ElectPreferredReplica
	if *unclean {
		how = kadm.ElectLiveReplica
	}
	rs, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{topic: setOf(parts)})
	if err != nil {
		return fmt.Errorf("elect leaders of %s: %w", topic, err)
	}
	return printElected(e, rs, topic, parts)
}

func setOf(parts []int32) map[int32]struct{} {
	s := make(map[int32]struct{}, len(parts))
	for _, p := range parts {
		s[p] = struct{}{}
	}
	return s
}

// printElected prints one line per partition and returns the first error
// other than ELECTION_NOT_NEEDED.
func printElected(e *env, rs kadm.ElectLeadersResults, topic string, parts []int32) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tRESULT")
	var first error
	for _, p := range parts {
		r, ok := rs[topic][p]
		if !ok {
			r.Err = errors.New("no answer")
		}
		switch {
		case r.Err == nil:
			fmt.Fprintf(tw, "%d\telected\n", p)
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			fmt.Fprintf(tw, "%d\tnot needed: %s\n", p, orName(r.ErrMessage, r.Err))
		default:
			fmt.Fprintf(tw, "%d\terror: %s\n", p, orName(r.ErrMessage, r.Err))
			if first == nil {
				first = fmt.Errorf("elect leader of %s/%d: %w: %s", topic, p, r.Err, r.ErrMessage)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return first
}

// orName is the broker's message, or the error's name when it sent none.
func orName(msg string, err error) string {
	if msg != "" {
		return msg
	}
	return err.Error()
}
