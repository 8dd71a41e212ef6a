package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(command{
		name:    "topics",
		summary: "topics create NAME [-partitions N] [-config k=v] | list | describe NAME | delete NAME",
		run:     runTopics,
	})
}

// topicVerbs are the verbs of `topics`, in the order usage lists them.
var topicVerbs = []adminVerb{
	{"create", topicsCreate},
	{"list", topicsList},
	{"describe", topicsDescribe},
	{"delete", topicsDelete},
}

func runTopics(ctx context.Context, e *env, args []string) error {
	return runAdmin(ctx, e, "topics", topicVerbs, args)
}

// configFlag collects repeated -config key=value pairs.
type configFlag map[string]*string

func (c configFlag) String() string { return fmt.Sprint(map[string]*string(c)) }

func (c configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	c[k] = &v
	return nil
}

func topicsCreate(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	fs := flag.NewFlagSet("topics create", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	partitions := fs.Int("partitions", -1, "number of partitions (-1: the broker's default)")
	replicas := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default)")
	configs := configFlag{}
	fs.Var(configs, "config", "topic config key=value (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("topics create needs exactly one NAME, got %q", pos)
	}
	resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*replicas), configs, pos[0])
	if err != nil {
		return fmt.Errorf("create topic %s: %w", pos[0], err)
	}
	fmt.Fprintf(e.stdout, "created topic %s with %d partitions\n", resp.Topic, resp.NumPartitions)
	return nil
}

func topicsList(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 0 {
		return usageErr("topics list takes no arguments, got %q", args)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for _, name := range topics.Names() {
		fmt.Fprintln(e.stdout, name)
	}
	return nil
}

func topicsDelete(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 1 {
		return usageErr("topics delete needs exactly one NAME, got %q", args)
	}
	if _, err := adm.DeleteTopic(ctx, args[0]); err != nil {
		return fmt.Errorf("delete topic %s: %w", args[0], err)
	}
	fmt.Fprintf(e.stdout, "deleted topic %s\n", args[0])
	return nil
}

// topicsDescribe prints the topic's partitions (leader, replicas, ISR, log
// start and end) and its non-default configs. A broker that cannot describe
// configs still gets the partition table, with a note.
func topicsDescribe(ctx context.Context, e *env, adm *kadm.Client, args []string) error {
	if len(args) != 1 {
		return usageErr("topics describe needs exactly one NAME, got %q", args)
	}
	name := args[0]
	topics, err := adm.ListTopics(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %s: %w", name, err)
	}
	td, ok := topics[name]
	if !ok {
		return fmt.Errorf("describe topic %s: not in the metadata response", name)
	}
	if td.Err != nil {
		return fmt.Errorf("describe topic %s: %w", name, td.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %s: start offsets: %w", name, err)
	}
	ends, err := adm.ListEndOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %s: end offsets: %w", name, err)
	}
	// The id as Kafka's own tools print a Uuid: URL-safe base64, unpadded.
	fmt.Fprintf(e.stdout, "topic %s  id %s  partitions %d\n", name, base64.RawURLEncoding.EncodeToString(td.ID[:]), len(td.Partitions))
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tSTART\tEND")
	for _, p := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(name, p.Partition)
		end, _ := ends.Lookup(name, p.Partition)
		fmt.Fprintf(tw, "%d\t%d\t%d\t%v\t%v\t%s\t%s\n", p.Partition, p.Leader, p.LeaderEpoch,
			p.Replicas, p.ISR, offsetText(s), offsetText(end))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	describeConfigs(ctx, e, adm, name)
	return nil
}

func offsetText(o kadm.ListedOffset) string {
	if o.Err != nil {
		return "error: " + o.Err.Error()
	}
	return fmt.Sprint(o.Offset)
}

func describeConfigs(ctx context.Context, e *env, adm *kadm.Client, name string) {
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		if err == nil {
			var lines []string
			for _, c := range rc.Configs {
				if c.Source == kmsg.ConfigSourceDefaultConfig {
					continue
				}
				lines = append(lines, fmt.Sprintf("  %s=%s", c.Key, c.MaybeValue()))
			}
			slices.Sort(lines)
			fmt.Fprintln(e.stdout, "configs:")
			for _, l := range lines {
				fmt.Fprintln(e.stdout, l)
			}
			return
		}
	}
	fmt.Fprintf(e.stdout, "configs: not available (%v)\n", err)
}
