// Command groupbench measures mini-kafka's consumer groups with franz-go
// group consumers and writes results/groups.md (and groups.json):
//
//   - churn: 12 partitions, 3 members, a 4th joins; how many partitions
//     change owner with the cooperative-sticky balancer (target: at most 3)
//     and, for comparison, with the eager range balancer;
//   - settle: 10 members started at once; the time from the last JoinGroup
//     written until the group is Stable with every partition owned
//     (target: within 1 s of its last JoinGroup).
//
// Each engine gets its own in-process broker on a fresh data directory
// under -dir, with sync=always.
//
//	groupbench [-engines segment,pebble,...] [-runs 5] [-out results]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/groupbench"
	"github.com/minikafka/minikafka/engine"
)

const (
	churnPartitions = 12
	churnMembers    = 3
	settleMembers   = 10
	churnTarget     = 3
	settleTarget    = time.Second
)

// engineResult is one engine's measurements.
type engineResult struct {
	Engine       string    `json:"engine"`
	Cooperative  churnJSON `json:"churn_cooperative_sticky"`
	Range        churnJSON `json:"churn_range"`
	SettleMillis []float64 `json:"settle_ms"`
	settles      []time.Duration
}

type churnJSON struct {
	Moved        int     `json:"moved"`
	SettleMillis float64 `json:"settle_ms"`
	Before       string  `json:"before"`
	After        string  `json:"after"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "groupbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("groupbench", flag.ContinueOnError)
	engines := fs.String("engines", strings.Join(engine.Names(), ","), "engines to measure")
	runs := fs.Int("runs", 5, "settle measurements per engine")
	out := fs.String("out", "results", "directory for groups.md and groups.json")
	dir := fs.String("dir", "", "parent of the brokers' data directories (default: a temporary directory here)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	parent := *dir
	if parent == "" {
		tmp, err := os.MkdirTemp(".", ".groupbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		parent = tmp
	}
	var results []engineResult
	for _, name := range strings.Split(*engines, ",") {
		fmt.Fprintf(os.Stderr, "groupbench: %s\n", name)
		r, err := measure(ctx, name, filepath.Join(parent, name), *runs)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, r)
	}
	cmdline := "go run ./cmd/groupbench " + strings.Join(args, " ")
	if err := bench.WriteFile(filepath.Join(*out, "groups.md"), report(results, parent, cmdline).Markdown()); err != nil {
		return err
	}
	return bench.WriteJSON(filepath.Join(*out, "groups.json"), results)
}

// measure starts a broker on engineName and takes every measurement on it.
func measure(ctx context.Context, engineName, dir string, runs int) (engineResult, error) {
	res := engineResult{Engine: engineName}
	s, err := broker.New(broker.Config{
		Dir:           dir,
		Engine:        engineName,
		EngineOptions: engine.Options{Sync: engine.SyncAlways},
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return res, err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	go s.Serve(ln)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b := &groupbench.Bench{Addrs: []string{ln.Addr().String()}, Topic: "groupbench", Partitions: churnPartitions, Poll: 2 * time.Millisecond}
	if err := b.Prepare(ctx); err != nil {
		return res, err
	}
	for _, c := range []struct {
		into     *churnJSON
		balancer kgo.GroupBalancer
	}{{&res.Cooperative, kgo.CooperativeStickyBalancer()}, {&res.Range, kgo.RangeBalancer()}} {
		cr, err := b.Churn(ctx, churnMembers, c.balancer)
		if err != nil {
			return res, fmt.Errorf("churn %s: %w", c.balancer.ProtocolName(), err)
		}
		*c.into = churnJSON{Moved: cr.Moved, SettleMillis: ms(cr.Settle), Before: shape(cr.Before), After: shape(cr.After)}
	}
	for range runs {
		d, err := b.Settle(ctx, settleMembers)
		if err != nil {
			return res, fmt.Errorf("settle: %w", err)
		}
		res.settles = append(res.settles, d)
		res.SettleMillis = append(res.SettleMillis, ms(d))
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// shape renders an assignment without member ids: partitions per member,
// sorted, e.g. "[0 3 6 9] [1 4 7 10] [2 5 8 11]".
func shape(a groupbench.Assignment) string {
	var parts []string
	for _, ps := range a {
		parts = append(parts, fmt.Sprint(ps))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func report(results []engineResult, dir, cmdline string) *bench.Report {
	r := &bench.Report{Title: "Consumer groups: churn and settle time"}
	m := bench.Machine(dir)
	s := r.Section("How")
	s.Para("Command: `%s` at commit %s, on %d CPUs (%s), %s, load average %s when it started.",
		cmdline, bench.GitCommit("."), m.CPUs, m.CPUModel, m.Kernel, m.LoadAvg)
	s.Para("Clients: franz-go group consumers, one in-process broker per engine, sync=always. "+
		"The coordinator's initial rebalance delay (group.initial.rebalance.delay) is %v.", group.DefaultInitialRebalanceDelay)
	s.Para("Churn: %d partitions, %d members settled, a %dth joins; *moved* counts partitions whose owner changed. "+
		"With the eager range balancer every member also revokes everything during the rebalance; "+
		"with cooperative-sticky only the moved partitions stop. *again* is from the new member's start until "+
		"the group is Stable with every partition owned (cooperative-sticky: across both rebalances); the members "+
		"already in the group learn of a rebalance from their next heartbeat, so *again* follows franz-go's "+
		"heartbeat interval (3 s by default), not the broker.",
		churnPartitions, churnMembers, churnMembers+1)
	s.Para("Settle: %d members started at once; the time from the last JoinGroup any of them wrote (a client hook; each "+
		"member joins twice, the second time with the member id the first answer gave it) until the group is Stable with "+
		"every partition owned, as seen by polling DescribeGroups every 2 ms (so it includes the SyncGroup round).",
		settleMembers)

	t := r.Section("Results").Table("engine", "moved (cooperative-sticky)", "again", "moved (range)", "again",
		"settle median", "settle max", "target")
	for _, res := range results {
		med, worst := medianMax(res.settles)
		ok := res.Cooperative.Moved <= churnTarget && worst <= settleTarget
		t.Row(res.Engine, fmt.Sprint(res.Cooperative.Moved), msText(res.Cooperative.SettleMillis),
			fmt.Sprint(res.Range.Moved), msText(res.Range.SettleMillis),
			med.Round(time.Millisecond).String(), worst.Round(time.Millisecond).String(), verdict(ok))
	}
	tg := r.Section("Targets")
	tg.List(
		fmt.Sprintf("churn with cooperative-sticky at most %d partitions: %s", churnTarget, verdict(allChurnOK(results))),
		fmt.Sprintf("a %d-member group settles within %v of its last JoinGroup: %s", settleMembers, settleTarget, verdict(allSettleOK(results))),
	)
	a := r.Section("Assignments (cooperative-sticky, first engine)")
	if len(results) > 0 {
		a.Para("Before: %s", results[0].Cooperative.Before)
		a.Para("After: %s", results[0].Cooperative.After)
	}
	return r
}

func msText(v float64) string { return fmt.Sprintf("%.0f ms", v) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func allChurnOK(rs []engineResult) bool {
	for _, r := range rs {
		if r.Cooperative.Moved > churnTarget {
			return false
		}
	}
	return true
}

func allSettleOK(rs []engineResult) bool {
	for _, r := range rs {
		if _, worst := medianMax(r.settles); worst > settleTarget {
			return false
		}
	}
	return true
}

func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
