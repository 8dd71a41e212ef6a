package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	register(command{
		name:    "transactions",
		summary: "transactions list [-state S] | describe ID... | producers TOPIC [-partition P]: transactional ids, their state, and a partition's producers",
		run:     runTransactions,
	})
}

// runTransactions is Kafka's kafka-transactions.sh: list (every
// coordinator's transactional ids, ListTransactions), describe (one id's
// state, producer, timeout, start and partitions, DescribeTransactions)
// and describe-producers (the producers a partition's leader knows, with
// the first offset of the transaction each has open there: a transaction
// that holds back the last stable offset shows up here).
func runTransactions(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return errors.New("transactions: list, describe ID..., or producers TOPIC")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("transactions "+sub, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	e.addGlobal(fs)
	state := fs.String("state", "", "list: only transactions in this state (Ongoing, PrepareCommit, CompleteCommit, ...)")
	part := fs.Int("partition", -1, "producers: only this partition")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	adm, ctx, done, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	switch sub {
	case "list":
		var states []string
		if *state != "" {
			states = []string{*state}
		}
		listed, err := adm.ListTransactions(ctx, nil, states)
		if err != nil && len(listed) == 0 {
			return fmt.Errorf("list transactions: %w", err)
		}
		fmt.Fprintln(tw, "TRANSACTIONAL_ID\tCOORDINATOR\tPRODUCER_ID\tSTATE")
		for _, t := range listed.Sorted() {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
		}
		return err
	case "describe":
		if len(rest) == 0 {
			return errors.New("transactions describe: name at least one transactional id")
		}
		described, err := adm.DescribeTransactions(ctx, rest...)
		if err != nil && len(described) == 0 {
			return fmt.Errorf("describe transactions: %w", err)
		}
		fmt.Fprintln(tw, "TRANSACTIONAL_ID\tCOORDINATOR\tPRODUCER_ID\tEPOCH\tSTATE\tTIMEOUT\tSTARTED\tPARTITIONS")
		for _, id := range rest {
			d, ok := described[id]
			switch {
			case !ok:
				d.Err = errors.New("not in the answer")
				fallthrough
			case d.Err != nil:
				fmt.Fprintf(tw, "%s\t\t\t\terror: %v\t\t\t\n", id, d.Err)
				if err == nil {
					err = fmt.Errorf("describe %s: %w", id, d.Err)
				}
				continue
			}
			started := "-"
			if d.StartTimestamp >= 0 {
				started = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339Nano)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%v\t%s\t%s\n", d.TxnID, d.Coordinator, d.ProducerID, d.ProducerEpoch,
				d.State, time.Duration(d.TimeoutMillis)*time.Millisecond, started, partitionsOf(d.Topics))
		}
		return err
	case "producers":
		if len(rest) != 1 {
			return errors.New("transactions producers: name one topic")
		}
		set := kadm.TopicsSet{}
		listed, err := adm.ListTopics(ctx, rest[0])
		if err != nil {
			return fmt.Errorf("producers of %s: %w", rest[0], err)
		}
		td, ok := listed[rest[0]]
		if !ok || td.Err != nil {
			return fmt.Errorf("producers of %s: %w", rest[0], orMissing(td.Err))
		}
		for _, pd := range td.Partitions.Sorted() {
			if *part < 0 || pd.Partition == int32(*part) {
				set.Add(rest[0], pd.Partition)
			}
		}
		described, err := adm.DescribeProducers(ctx, set)
		if err != nil && len(described) == 0 {
			return fmt.Errorf("describe producers: %w", err)
		}
		fmt.Fprintln(tw, "PARTITION\tPRODUCER_ID\tEPOCH\tLAST_SEQUENCE\tLAST_WRITE\tCOORDINATOR_EPOCH\tOPEN_TXN_START_OFFSET")
		for _, pp := range described.SortedPartitions() {
			if pp.Err != nil {
				fmt.Fprintf(tw, "%d\terror: %v\t\t\t\t\t\n", pp.Partition, pp.Err)
				continue
			}
			for _, p := range pp.ActiveProducers.Sorted() {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%d\t%d\n", pp.Partition, p.ProducerID, p.ProducerEpoch, p.LastSequence,
					time.UnixMilli(p.LastTimestamp).UTC().Format(time.RFC3339Nano), p.CoordinatorEpoch, p.CurrentTxnStartOffset)
			}
		}
		return err
	}
	return fmt.Errorf("transactions: unknown subcommand %q (list, describe, producers)", sub)
}

// partitionsOf is topic/partition,... in order.
func partitionsOf(s kadm.TopicsSet) string {
	out := ""
	for _, t := range slices.Sorted(maps.Keys(s)) {
		for _, p := range slices.Sorted(maps.Keys(s[t])) {
			if out != "" {
				out += ","
			}
			out += fmt.Sprintf("%s/%d", t, p)
		}
	}
	if out == "" {
		return "-"
	}
	return out
}
