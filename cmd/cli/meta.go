package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(command{
		name:    "meta",
		summary: "meta: cluster id, the controller quorum and its leader, every broker and its state, topics with their partition counts",
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
	// The brokers with their state (fenced ones too) and the quorum; a
	// broker that serves neither API leaves them out.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeFencedBrokers = true
	cluster, _ := dc.RequestWith(ctx, cl)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic = "__cluster_metadata"
	qt.Partitions = append(qt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, qt)
	quorum, _ := dq.RequestWith(ctx, cl)
	return printMeta(e, m, cluster, quorum)
}

func printMeta(e *env, m kadm.Metadata, cluster *kmsg.DescribeClusterResponse, quorum *kmsg.DescribeQuorumResponse) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cluster\t%s\n", m.Cluster)
	fmt.Fprintf(tw, "controller\t%d\n", m.Controller)
	if quorum != nil && quorum.ErrorCode == 0 && len(quorum.Topics) == 1 && len(quorum.Topics[0].Partitions) == 1 {
		q := quorum.Topics[0].Partitions[0]
		fmt.Fprintf(tw, "quorum\tleader %d, term %d, committed %d\n", q.LeaderID, q.LeaderEpoch, q.HighWatermark)
		fmt.Fprintln(tw, "\nVOTER\tREPLICATED\tLAST CONTACT")
		for _, v := range q.CurrentVoters {
			contact := "-"
			if v.LastFetchTimestamp >= 0 {
				contact = time.UnixMilli(v.LastFetchTimestamp).Format(time.RFC3339Nano)
			}
			if v.ReplicaID == q.LeaderID {
				contact = "leader"
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\n", v.ReplicaID, v.LogEndOffset, contact)
		}
	}
	fmt.Fprintln(tw, "\nBROKER\tHOST:PORT\tRACK\tSTATE")
	if cluster != nil && cluster.ErrorCode == 0 {
		for _, b := range cluster.Brokers {
			rack, state := "", "active"
			if b.Rack != nil {
				rack = *b.Rack
			}
			if b.IsFenced {
				state = "fenced"
			}
			fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, state)
		}
	} else {
		for _, b := range m.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, "active")
		}
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
