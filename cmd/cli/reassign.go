package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/admin"
)

func init() {
	register(command{
		name: "reassign",
		summary: "reassign -topic T [-partition P] -replicas 2,3,4 [-throttle BYTES] [-wait] | -topic T [-partition P] -cancel | -topic T -unthrottle | -list [-topic T]" +
			": move partitions to other brokers, cancel a move, take a move's throttle off, list the moves in progress",
		run: runReassign,
	})
}

// runReassign is Kafka's kafka-reassign-partitions, one topic at a time:
// -replicas moves a partition (or, without -partition, every partition of
// the topic) onto those brokers, the first the preferred leader; the new
// replicas catch up and join the ISR, then the old ones are dropped.
// -wait waits, within -timeout, until the moves are done. -cancel stops a
// move in progress, back to the original replicas; -list shows the moves
// in progress (every topic's, without -topic). -throttle caps the copy of
// the moves at BYTES a second on every broker involved (admin.SetThrottle); with
// -wait the throttle is taken off once the moves are done, without it (or
// when -wait gives up) it stays until -unthrottle. Moving and cancelling print
// each partition's outcome and fail after the table if any partition
// failed.
func runReassign(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("reassign", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	topic := fs.String("topic", "", "the topic")
	partition := fs.Int("partition", -1, "the partition (-1: every partition of the topic)")
	replicas := fs.String("replicas", "", "the brokers to move onto, comma-separated, the preferred leader first")
	cancel := fs.Bool("cancel", false, "cancel the move in progress")
	list := fs.Bool("list", false, "list the moves in progress")
	wait := fs.Bool("wait", false, "after -replicas: wait until the moves are done")
	throttle := fs.Int64("throttle", 0, "with -replicas: copy the moves at most this many bytes a second per broker (0: unthrottled)")
	unthrottle := fs.Bool("unthrottle", false, "take the replication throttle off the topic and every broker")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("reassign takes flags only, got %q", pos)
	}
	modes := 0
	for _, set := range []bool{*replicas != "", *cancel, *list, *unthrottle} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return usageErr("reassign needs exactly one of -replicas, -cancel, -unthrottle and -list")
	}
	if *throttle < 0 || *throttle > 0 && *replicas == "" {
		return usageErr("-throttle takes a positive rate, with -replicas")
	}
	if *topic == "" && !*list {
		return usageErr("reassign needs -topic")
	}
	var target []int32
	if *replicas != "" {
		if target, err = brokerIDs(*replicas); err != nil {
			return usageErr("-replicas %q: %v", *replicas, err)
		}
	}
	cl, ctx, done, err := e.session(ctx, kgo.RetryTimeout(e.timeout/2))
	if err != nil {
		return err
	}
	defer done()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(max(e.timeout*2/5, time.Second).Milliseconds()))
	if *list {
		var topics []string
		if *topic != "" {
			topics = []string{*topic}
		}
		return printReassignments(ctx, e, cl, topics, int32(*partition))
	}
	if *unthrottle {
		if err := admin.RemoveThrottle(ctx, adm, *topic); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "unthrottled")
		return nil
	}
	parts, err := topicPartitions(ctx, adm, *topic, int32(*partition))
	if err != nil {
		return fmt.Errorf("reassign %s: %w", *topic, err)
	}
	if *throttle > 0 {
		moves := map[int32][]int32{}
		for _, p := range parts {
			moves[p] = target
		}
		if err := admin.SetThrottle(ctx, adm, *topic, moves, *throttle); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "throttled at %d bytes/s\n", *throttle)
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range parts {
		req.Assign(*topic, p, target) // nil: cancel
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign %s: %w", *topic, err)
	}
	if err := printReassigned(e, rs, *topic, parts, target); err != nil || !*wait || *cancel {
		return err
	}
	if err := awaitReassigned(ctx, e, adm, *topic, parts); err != nil {
		return err
	}
	if *throttle > 0 {
		if err := admin.RemoveThrottle(ctx, adm, *topic); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "unthrottled")
	}
	return nil
}

// brokerIDs parses "2,3,4".
func brokerIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("broker id %q: %w", f, err)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// printReassigned prints one line per partition and returns the first
// error.
func printReassigned(e *env, rs kadm.AlterPartitionAssignmentsResponses, topic string, parts, target []int32) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tRESULT")
	var first error
	for _, p := range parts {
		r, ok := rs[topic][p]
		if !ok {
			r.Err = errors.New("no answer")
		}
		switch {
		case r.Err != nil:
			fmt.Fprintf(tw, "%d\terror: %s\n", p, orName(r.ErrMessage, r.Err))
			if first == nil {
				first = fmt.Errorf("reassign %s/%d: %w: %s", topic, p, r.Err, r.ErrMessage)
			}
		case target == nil:
			fmt.Fprintf(tw, "%d\tcancelled\n", p)
		default:
			fmt.Fprintf(tw, "%d\tmoving to %s\n", p, idList(target))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return first
}

// awaitReassigned polls ListPartitionReassignments until none of parts is
// moving.
func awaitReassigned(ctx context.Context, e *env, adm *kadm.Client, topic string, parts []int32) error {
	for {
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: setOf(parts)})
		if err == nil && len(ls[topic]) == 0 {
			fmt.Fprintln(e.stdout, "done")
			return nil
		}
		if err != nil && !errors.Is(err, kerr.NotController) {
			return fmt.Errorf("list reassignments of %s: %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reassign %s: %d partitions still moving: %w", topic, len(ls[topic]), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// printReassignments prints the moves in progress of topics (nil: every
// topic), only partition p when p >= 0.
func printReassignments(ctx context.Context, e *env, cl *kgo.Client, topics []string, p int32) error {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(max(e.timeout*2/5, time.Second).Milliseconds())
	if len(topics) > 0 {
		parts, err := topicPartitions(ctx, kadm.NewClient(cl), topics[0], p)
		if err != nil {
			return fmt.Errorf("list reassignments of %s: %w", topics[0], err)
		}
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = topics[0], parts
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("list reassignments: %w", err)
	}
	slices.SortFunc(resp.Topics, func(a, b kmsg.ListPartitionReassignmentsResponseTopic) int { return strings.Compare(a.Topic, b.Topic) })
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, t := range resp.Topics {
		slices.SortFunc(t.Partitions, func(a, b kmsg.ListPartitionReassignmentsResponseTopicPartition) int {
			return int(a.Partition - b.Partition)
		})
		for _, sp := range t.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.Topic, sp.Partition, idList(sp.Replicas), idList(sp.AddingReplicas), idList(sp.RemovingReplicas))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// idList is "2,3,4", or "-" for none.
func idList(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
