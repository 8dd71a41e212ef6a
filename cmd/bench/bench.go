package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/report"
	"github.com/minikafka/minikafka/engine"
)

// options are the command line.
type options struct {
	profile     string
	name        string
	out         string
	dir         string
	targets     string
	brokerBin   string
	peersBin    string
	reps        int
	duration    time.Duration
	warmUp      time.Duration
	recovery    int64
	noCert      bool
	noRecovery  bool
	progress    bool
	render      string
	readme      string
	enginesRef  string
	commandLine string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.profile, "profile", "quick", "plan: "+strings.Join(matrix.ProfileNames(), "|")+" (quick: about 2 minutes; full: about 25 on 2 cores)")
	fs.StringVar(&o.name, "name", "", "run name, the directory under -out (default: DATE-PROFILE)")
	fs.StringVar(&o.out, "out", "results", "results directory (its README.md is the index of runs)")
	fs.StringVar(&o.dir, "dir", "", "parent of the servers' data directories (default: a temporary directory in the current one, on this checkout's disk)")
	fs.StringVar(&o.targets, "targets", "segment,pebble,badger,memory,kfake,nats", "targets in order: engine names (under the broker), kfake, nats")
	fs.StringVar(&o.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&o.peersBin, "peers-bin", "", "peers binary (default: go build in bench/peers)")
	fs.IntVar(&o.reps, "reps", 0, "repetitions per cell (0: the profile's)")
	fs.DurationVar(&o.duration, "duration", 0, "measured produce phase per cell (0: the profile's)")
	fs.DurationVar(&o.warmUp, "warm-up", -1, "warm-up per cell (-1: the profile's)")
	fs.Int64Var(&o.recovery, "recovery-bytes", 0, "payload before the recovery kill -9 (0: the profile's)")
	fs.BoolVar(&o.noCert, "no-cert", false, "skip the certification suites")
	fs.BoolVar(&o.noRecovery, "no-recovery", false, "skip the kill -9 recovery figures")
	fs.BoolVar(&o.progress, "progress", isTerminal(stderr), "progress bars on stderr")
	fs.StringVar(&o.readme, "readme", "README.md", "project README whose cmd/bench block (between report.MarkBegin and report.MarkEnd) is rewritten from the newest full run; a README without the markers is left alone")
	fs.StringVar(&o.enginesRef, "engines-ref", "results/engines.json", "the engine benchmark's results, whose ratios against the raw disk the run records (missing: none)")
	fs.StringVar(&o.render, "render", "", "render RUN_DIR/report.md and its charts again from RUN_DIR/results.json, measure nothing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageErr("unexpected arguments %q", fs.Args())
	}
	if _, ok := matrix.Profiles[o.profile]; !ok {
		return o, usageErr("-profile %q: want one of %v", o.profile, matrix.ProfileNames())
	}
	if len(splitList(o.targets)) == 0 {
		return o, usageErr("-targets is empty")
	}
	o.commandLine = strings.TrimSpace("go run ./cmd/bench " + strings.Join(args, " "))
	return o, nil
}

func (o options) profileWithOverrides() matrix.Profile {
	p := matrix.Profiles[o.profile]
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

func runBench(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if o.render != "" {
		return o.rerender(stderr)
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	dataDir, cleanup, err := o.dataDir()
	if err != nil {
		return err
	}
	defer cleanup()
	bins, cleanupBins := o.binaries(ctx, root, stderr)
	defer cleanupBins()
	logFile, err := os.Create(filepath.Join(dataDir, "servers.log"))
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer logFile.Close()
	// The log shares the data's filesystem: once that is full, a failing
	// write must not close the servers' stderr pipes (they would die of
	// SIGPIPE instead of reporting the full disk).
	logs := bestEffort{logFile}

	prof := o.profileWithOverrides()
	names := splitList(o.targets)
	cfg := matrix.Config{
		Name: o.runName(prof), Profile: prof, Dir: dataDir, Command: o.commandLine,
		Targets: buildTargets(names, bins, prof.Partitions, logs),
		Setup:   setupLines(names, bins, prof.Partitions), SkipRecovery: o.noRecovery, Log: stderr,
		SyncInterval: engine.DefaultSyncInterval,
	}
	if !o.noCert {
		cfg.Cert = &matrix.CertConfig{ModuleDir: root, Engines: engineNames(names), Fresh: prof.CertFresh}
	}
	if cfg.EnginesRef, err = matrix.LoadEnginesRef(o.enginesRef); err != nil {
		fmt.Fprintln(stderr, err)
	}
	if o.progress {
		cfg.Bar = func(what string, total int64) (func(int64), func()) { return bar(stderr, what, total) }
	}
	fmt.Fprintf(stderr, "run %s, profile %s: %s\n", cfg.Name, prof.Name, prof.DescribePlan())
	run, err := matrix.Measure(ctx, cfg)
	if err != nil {
		return err
	}
	return o.write(run, stderr)
}

// write renders the run and the index, and says what failed.
func (o options) write(run *matrix.Run, stderr io.Writer) error {
	dir := filepath.Join(o.out, run.Name)
	if err := report.Write(run, dir); err != nil {
		return err
	}
	if err := o.writeIndex(o.out, stderr); err != nil {
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
	fmt.Fprintf(stderr, "wrote %s (%d cells with figures, %d without; took %s)\n",
		filepath.Join(dir, report.ReportFile), ok, failed, time.Duration(run.Duration*float64(time.Second)).Round(time.Second))
	switch {
	case run.Interrupted != "":
		return fmt.Errorf("interrupted: %s", run.Interrupted)
	case ok == 0:
		return errors.New("no cell finished: see the report's Missing cells")
	}
	return nil
}

// runName is -name, or DATE-PROFILE with a suffix when that exists.
func (o options) runName(p matrix.Profile) string {
	if o.name != "" {
		return o.name
	}
	base := time.Now().UTC().Format("2006-01-02") + "-" + p.Name
	name := base
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(o.out, name)); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

func (o options) dataDir() (string, func(), error) {
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("data dir: %w", err)
		}
		tmp, err := os.MkdirTemp(o.dir, "bench-")
		if err != nil {
			return "", nil, fmt.Errorf("data dir: %w", err)
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	tmp, err := os.MkdirTemp(".", ".bench-data-")
	if err != nil {
		return "", nil, fmt.Errorf("data dir: %w", err)
	}
	abs, err := filepath.Abs(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("data dir: %w", err)
	}
	return abs, func() { os.RemoveAll(abs) }, nil
}

// binaries builds (or takes from the flags) the broker and the peers
// command. A build that fails fails its targets' cells, not the run.
func (o options) binaries(ctx context.Context, root string, log io.Writer) (binaries, func()) {
	b := binaries{
		franzGo:      requireVersion(filepath.Join(root, "go.mod"), "github.com/twmb/franz-go"),
		natsVersion:  requireVersion(filepath.Join(root, "bench", "peers", "go.mod"), "github.com/nats-io/nats-server/v2"),
		natsGoClient: requireVersion(filepath.Join(root, "bench", "peers", "go.mod"), "github.com/nats-io/nats.go"),
	}
	b.self, _ = os.Executable()
	tmp, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		b.brokerErr, b.peersErr = err, err
		return b, func() {}
	}
	cleanup := func() { os.RemoveAll(tmp) }
	b.broker, b.peers = o.brokerBin, o.peersBin
	if b.broker == "" {
		b.broker = filepath.Join(tmp, "broker")
		b.brokerErr = goBuild(ctx, root, "./cmd/broker", b.broker, log)
	}
	if b.peers == "" && contains(splitList(o.targets), targetNATS) {
		b.peers = filepath.Join(tmp, "peers")
		b.peersErr = goBuild(ctx, filepath.Join(root, "bench", "peers"), ".", b.peers, log)
	}
	for _, err := range []error{b.brokerErr, b.peersErr} {
		if err != nil {
			fmt.Fprintln(log, err)
		}
	}
	return b, cleanup
}

func engineNames(targets []string) []string {
	var out []string
	for _, t := range targets {
		if t != targetKfake && t != targetNATS {
			out = append(out, t)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func bar(w io.Writer, what string, total int64) (func(int64), func()) {
	b := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return func(n int64) { _ = b.Set64(n) }, func() { _ = b.Finish() }
}

// rerender writes a run's report and charts again from its results.json
// (after a change to the report's code), and the index beside it.
func (o options) rerender(stderr io.Writer) error {
	dir := o.render
	run, err := report.Load(filepath.Join(dir, report.ResultsFile))
	if err != nil {
		return err
	}
	if err := report.Write(run, dir); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", filepath.Join(dir, report.ReportFile))
	return o.writeIndex(filepath.Dir(filepath.Clean(dir)), stderr)
}

// writeIndex rewrites the index of runs and the README's benchmark section.
func (o options) writeIndex(results string, stderr io.Writer) error {
	if err := report.WriteIndex(results); err != nil {
		return err
	}
	if o.readme == "" {
		return nil
	}
	changed, err := report.UpdateReadme(o.readme, results)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if changed {
		fmt.Fprintf(stderr, "updated the cmd/bench block of %s\n", o.readme)
	}
	return err
}

// bestEffort writes what it can and never fails.
type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	_, _ = b.w.Write(p)
	return len(p), nil
}
