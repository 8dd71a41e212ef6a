package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/report"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/engine"
)

func init() {
	for _, name := range matrix.ProfileNames() {
		p := matrix.Profiles[name]
		register(profile{
			name:    name,
			summary: "the end-to-end matrix: the broker over each engine against kfake and NATS JetStream, " + matrixLength[name],
			writes:  "results/<run>/report.md, results.json and charts, and the index results/README.md",
			flags:   func(fs *flag.FlagSet) plan { return matrixFlags(fs, p) },
		})
	}
}

// matrixLength says how long each matrix profile takes on the 2-core
// development machine (the runs record their own duration).
var matrixLength = map[string]string{
	"quick": "a smoke run of about 2 minutes",
	"full":  "the committed runs: about 21 minutes on 2 cores",
}

// matrixPlan is the quick or full matrix.
type matrixPlan struct {
	base       matrix.Profile
	name       string
	targets    string
	brokerBin  string
	peersBin   string
	reps       int
	duration   time.Duration
	warmUp     time.Duration
	recovery   int64
	noRecovery bool
}

func matrixFlags(fs *flag.FlagSet, p matrix.Profile) plan {
	o := &matrixPlan{base: p}
	fs.StringVar(&o.name, "name", "", "run name, the directory under -out (default: DATE-PROFILE)")
	fs.StringVar(&o.targets, "targets", "segment,pebble,badger,memory,kfake,nats", "targets in order: engine names (under the broker), kfake, nats")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.peersBin, "peers-bin", "", "peers binary (default: go build in bench/peers)")
	fs.IntVar(&o.reps, "reps", 0, "repetitions per cell (0: the profile's)")
	fs.DurationVar(&o.duration, "duration", 0, "measured produce phase per cell (0: the profile's)")
	fs.DurationVar(&o.warmUp, "warm-up", -1, "warm-up per cell (-1: the profile's)")
	fs.Int64Var(&o.recovery, "recovery-bytes", 0, "payload before the recovery kill -9 (0: the profile's)")
	fs.BoolVar(&o.noRecovery, "no-recovery", false, "skip the kill -9 recovery figures")
	return o
}

// profile is the built-in plan with the flags' overrides.
func (o *matrixPlan) profile() matrix.Profile {
	p := o.base
	if o.reps > 0 {
		p.Reps = o.reps
	}
	if o.duration > 0 {
		p.Duration = o.duration
	}
	if o.warmUp >= 0 {
		p.WarmUp = o.warmUp
	}
	if o.recovery > 0 {
		p.RecoveryBytes = o.recovery
	}
	return p
}

func (o *matrixPlan) measure(ctx context.Context, e *env) error {
	names := bench.SplitList(o.targets)
	if len(names) == 0 {
		return usageErr("-targets is empty")
	}
	root, err := harness.ModuleRoot(ctx)
	if err != nil {
		return usageErr("%v", err)
	}
	dataDir, err := e.dataDir()
	if err != nil {
		return err
	}
	bins := o.binaries(ctx, e, root, names)
	logs, err := e.serverLog(dataDir)
	if err != nil {
		return err
	}
	prof := o.profile()
	cfg := matrix.Config{
		Name: o.runName(e.out, prof), Profile: prof, Dir: dataDir, Command: e.command,
		Targets: buildTargets(names, bins, prof.Partitions, logs),
		Setup:   setupLines(names, bins, prof.Partitions), SkipRecovery: o.noRecovery, Log: e.stderr,
		SyncInterval: engine.DefaultSyncInterval, Bar: e.bar(true),
	}
	fmt.Fprintf(e.stderr, "run %s, profile %s: %s\n", cfg.Name, prof.Name, prof.DescribePlan())
	run, err := matrix.Measure(ctx, cfg)
	if err != nil {
		return err
	}
	return o.write(run, e)
}

// write renders the run and the index, and says what failed.
func (o *matrixPlan) write(run *matrix.Run, e *env) error {
	dir := filepath.Join(e.out, run.Name)
	if err := report.Write(run, dir); err != nil {
		return err
	}
	if err := o.writeIndex(e.out, e); err != nil {
		return err
	}
	ok, failed := 0, 0
	for _, c := range run.Cells {
		if c.OKReps() > 0 {
			ok++
		} else {
			failed++
		}
	}
	fmt.Fprintf(e.stderr, "wrote %s (%d cells with figures, %d without; took %s)\n",
		filepath.Join(dir, report.ReportFile), ok, failed, run.Took().Round(time.Second))
	switch {
	case run.Interrupted != "":
		return fmt.Errorf("interrupted: %s", run.Interrupted)
	case ok == 0:
		return errors.New("no cell finished: see the report's Missing cells")
	}
	return nil
}

// runName is -name, or DATE-PROFILE with a suffix when that exists.
func (o *matrixPlan) runName(out string, p matrix.Profile) string {
	if o.name != "" {
		return o.name
	}
	base := time.Now().UTC().Format("2006-01-02") + "-" + p.Name
	name := base
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(out, name)); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// binaries builds (or takes from the flags) the broker and the peers
// command. A build that fails fails its targets' cells, not the run.
func (o *matrixPlan) binaries(ctx context.Context, e *env, root string, names []string) binaries {
	b := binaries{
		franzGo:      requireVersion(filepath.Join(root, "go.mod"), "github.com/twmb/franz-go"),
		natsVersion:  requireVersion(filepath.Join(root, "bench", "peers", "go.mod"), "github.com/nats-io/nats-server/v2"),
		natsGoClient: requireVersion(filepath.Join(root, "bench", "peers", "go.mod"), "github.com/nats-io/nats.go"),
		broker:       o.brokerBin,
		peers:        o.peersBin,
	}
	b.self, _ = self()
	tmp, err := e.binDir()
	if err != nil {
		b.brokerErr, b.peersErr = err, err
		return b
	}
	if b.broker == "" {
		b.broker, b.brokerErr = harness.BuildBroker(ctx, tmp, "", e.stderr)
	}
	if b.peers == "" && slices.Contains(names, targetNATS) {
		b.peers = filepath.Join(tmp, "peers")
		b.peersErr = harness.GoBuild(ctx, filepath.Join(root, "bench", "peers"), ".", b.peers, e.stderr)
	}
	for _, err := range []error{b.brokerErr, b.peersErr} {
		if err != nil {
			fmt.Fprintln(e.stderr, err)
		}
	}
	return b
}

// render writes a run's report and charts again from its results.json
// (after a change to the report's code), and the index beside it.
func (o *matrixPlan) render(dir string, e *env) error {
	run, err := report.Load(filepath.Join(dir, report.ResultsFile))
	if err != nil {
		return err
	}
	if err := report.Write(run, dir); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", filepath.Join(dir, report.ReportFile))
	return o.writeIndex(filepath.Dir(filepath.Clean(dir)), e)
}

// writeIndex rewrites the index of runs, results/README.md.
func (o *matrixPlan) writeIndex(results string, _ *env) error { return report.WriteIndex(results) }
