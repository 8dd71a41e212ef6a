// Command groupbench measures mini-kafka's consumer groups with franz-go
// group consumers and writes results/groups.md (and groups.json):
//
//   - churn: 12 partitions, 3 members, a 4th joins; how many partitions
//     change owner with the cooperative-sticky balancer (target: at most 3)
//     and, for comparison, with the eager range balancer;
//
//   - settle: 10 members started at once; the time from the last JoinGroup
//     written until the group is Stable with every partition owned
//     (target: within 1 s of its last JoinGroup).
//
//   - load: produce throughput (franz-go, acks=all) with and without 100
//     one-member groups heartbeating every 3 s and committing every 5 s
//     (franz-go's defaults); target: at most 5 % lower.
//
// Each engine gets its own in-process broker on a fresh data directory
// under -dir, with sync=always.
//
//	groupbench [-engines segment,pebble,...] [-runs 5] [-load-reps 3] [-out results]
package main

import (
	"context"
	"errors"
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
	_ "github.com/minikafka/minikafka/engines/all"
)

const (
	churnPartitions = 12
	churnMembers    = 3
	settleMembers   = 10
	churnTarget     = 3
	settleTarget    = time.Second
	loadTarget      = 5.0 // percent
	loadHeartbeat   = 3 * time.Second
	loadCommit      = 5 * time.Second
)

// engineResult is one engine's measurements.
type engineResult struct {
	Engine       string    `json:"engine"`
	Cooperative  churnJSON `json:"churn_cooperative_sticky"`
	Range        churnJSON `json:"churn_range"`
	SettleMillis []float64 `json:"settle_ms"`
	Load         loadJSON  `json:"load"`
	settles      []time.Duration
}

// loadJSON is the produce throughput with and without group traffic.
type loadJSON struct {
	Groups      int       `json:"groups"`
	RunSeconds  float64   `json:"run_seconds"`
	RecordBytes int       `json:"record_bytes"`
	Baseline    []float64 `json:"baseline_records_per_s"`
	WithGroups  []float64 `json:"with_groups_records_per_s"`
	GroupReqs   []float64 `json:"group_requests_per_s"`
}

// change is the median, over the pairs of runs (one without groups, the
// next with), of the relative change in percent (negative: slower).
// Pairing compares runs close in time, so a machine whose speed drifts
// (other work on it) disturbs the figure less than comparing medians.
func (l loadJSON) change() float64 {
	var ratios []float64
	for i := range min(len(l.Baseline), len(l.WithGroups)) {
		if l.Baseline[i] > 0 {
			ratios = append(ratios, (l.WithGroups[i]/l.Baseline[i]-1)*100)
		}
	}
	return medianF(ratios)
}

// spread is the largest relative difference between two runs without
// groups, in percent: the noise the change must be read against.
func (l loadJSON) spread() float64 {
	if len(l.Baseline) < 2 {
		return 0
	}
	lo, hi := slices.Min(l.Baseline), slices.Max(l.Baseline)
	return (hi/lo - 1) * 100
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

type loadFlags struct {
	groups, size, reps int
	run                time.Duration
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
	var lf loadFlags
	fs.IntVar(&lf.groups, "load-groups", 100, "groups heartbeating and committing during the load measurement")
	fs.DurationVar(&lf.run, "load-run", 15*time.Second, "length of each produce run of the load measurement")
	fs.IntVar(&lf.size, "record-size", 100, "value bytes per record")
	fs.IntVar(&lf.reps, "load-reps", 5, "pairs of produce runs, without then with groups (0: skip)")
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
		r, err := measure(ctx, name, filepath.Join(parent, name), *runs, lf)
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
func measure(ctx context.Context, engineName, dir string, runs int, lf loadFlags) (engineResult, error) {
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
	var err2 error
	res.Load, err2 = measureLoad(ctx, b, lf)
	return res, err2
}

// measureLoad alternates produce runs without and with group traffic, each
// on a fresh topic.
func measureLoad(ctx context.Context, b *groupbench.Bench, lf loadFlags) (loadJSON, error) {
	l := loadJSON{Groups: lf.groups, RunSeconds: lf.run.Seconds(), RecordBytes: lf.size}
	for i := range lf.reps {
		rate, err := b.ProduceRate(ctx, fmt.Sprintf("plain-%d", i), lf.run, lf.size)
		if err != nil {
			return l, fmt.Errorf("baseline: %w", err)
		}
		l.Baseline = append(l.Baseline, rate)
		gl, err := b.StartGroupLoad(ctx, lf.groups, "committed", loadHeartbeat, loadCommit)
		if err != nil {
			return l, fmt.Errorf("group load: %w", err)
		}
		// Let one commit interval pass: the load then runs at its steady
		// rate for the whole produce run.
		time.Sleep(loadCommit)
		start, before := time.Now(), gl.Requests()
		rate, err = b.ProduceRate(ctx, fmt.Sprintf("loaded-%d", i), lf.run, lf.size)
		elapsed, reqs := time.Since(start), gl.Requests()-before
		_, lerr := gl.Stop()
		if err = errors.Join(err, lerr); err != nil {
			return l, fmt.Errorf("with groups: %w", err)
		}
		l.WithGroups = append(l.WithGroups, rate)
		l.GroupReqs = append(l.GroupReqs, float64(reqs)/elapsed.Seconds())
	}
	return l, nil
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
	if len(results) > 0 && len(results[0].Load.Baseline) > 0 {
		l0 := results[0].Load
		ls := r.Section("Produce throughput with group traffic")
		ls.Para("%d produce runs of %v each, records of %d bytes (franz-go, acks=all, round-robin over %d partitions, a fresh topic "+
			"each) alternate without and with %d one-member groups that heartbeat every 3 s and commit every 5 s "+
			"(franz-go's defaults) on one shared client. *change* is the median over the pairs (a run without, then one with) "+
			"of the relative change; *noise* is the largest difference between two runs without groups, what the change "+
			"must be read against.",
			2*len(l0.Baseline), time.Duration(l0.RunSeconds*float64(time.Second)), l0.RecordBytes, churnPartitions, l0.Groups)
		lt := ls.Table("engine", "without groups (median)", "with groups (median)", "change", "noise", "group requests/s", "runs without", "runs with", "target")
		for _, res := range results {
			l := res.Load
			lt.Row(res.Engine, bench.Rate(medianF(l.Baseline))+"/s", bench.Rate(medianF(l.WithGroups))+"/s",
				fmt.Sprintf("%+.1f %%", l.change()), fmt.Sprintf("%.0f %%", l.spread()), fmt.Sprintf("%.0f", medianF(l.GroupReqs)),
				rates(l.Baseline), rates(l.WithGroups), l.verdict())
		}
	}
	tg := r.Section("Targets")
	tg.List(
		fmt.Sprintf("churn with cooperative-sticky at most %d partitions: %s", churnTarget, verdict(allChurnOK(results))),
		fmt.Sprintf("a %d-member group settles within %v of its last JoinGroup: %s", settleMembers, settleTarget, verdict(allSettleOK(results))),
		fmt.Sprintf("heartbeats and commits of 100 groups lower produce throughput by at most %.0f %%: %s", loadTarget, loadVerdict(results)),
	)
	a := r.Section("Assignments (cooperative-sticky, first engine)")
	if len(results) > 0 {
		a.Para("Before: %s", results[0].Cooperative.Before)
		a.Para("After: %s", results[0].Cooperative.After)
	}
	return r
}

func rates(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = bench.Rate(x)
	}
	return strings.Join(parts, " ")
}

// verdict judges the load target. When runs without groups differ among
// themselves by more than twice the target, no change can be read at that
// resolution: not resolved, whichever way the median went.
func (l loadJSON) verdict() string {
	switch c := l.change(); {
	case l.spread() > 2*loadTarget:
		return fmt.Sprintf("not resolved (noise %.0f %%)", l.spread())
	case c >= -loadTarget:
		return "met"
	default:
		return "MISSED"
	}
}

// loadVerdict is the worst verdict over the engines.
func loadVerdict(rs []engineResult) string {
	out := "met"
	for _, r := range rs {
		if len(r.Load.Baseline) == 0 {
			continue
		}
		switch v := r.Load.verdict(); {
		case v == "MISSED":
			return v
		case v != "met":
			out = "not resolved on this machine (see the noise column)"
		}
	}
	return out
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
