// Command benchcheck is the benchmark regression check: it compares the
// ratios of a new cmd/bench run (each engine under the broker against
// kfake, segment against the other engines and JetStream, catch-up reads)
// with the last committed run of the same profile, and fails when one
// dropped by more than the tolerance.
//
//	go run ./cmd/benchcheck                              # newest run in results/ against the last committed one
//	go run ./cmd/benchcheck -new results/R/results.json -base results/S/results.json
//	go run ./cmd/benchcheck -profile engines             # results/engines.json against its committed version
//
// The one-file reports (engines.json, and every workload's: broker,
// cluster, groups, reassign, replication, transactions) are checked the same way with
// -profile (or -new naming the file): the engines' ratios against the
// raw disk; a workload's ratios are its columns and targets that divide
// by a reference (those its targets mark gate fail the check: the
// broker's against kfake, replication's RF 3 over RF 1) and, reported
// only, each other target's margin to its bound. A workload's results in
// a format before bench/result are refused: regenerate them.
//
// Ratios, not rates, are compared: both sides of a ratio ran on the same
// machine at the same time, so a slower machine does not fail the check,
// while one engine getting slower relative to the others does. The
// headline ratios gate (those at the reference point, 1 KiB and 256 in
// flight with acks=all and sync=always); the others are listed with their change, and fail the
// check only with -all: cells of a few seconds on a shared machine move by
// more than 15 % on their own.
//
// Exit status: 0 no headline drop (ratios missing from the new run are
// listed but pass), 1 a drop beyond the tolerance, 2 bad usage or nothing
// to compare.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/matrix"
	"github.com/minikafka/minikafka/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

var (
	errUsage = errors.New("usage")
	errDrop  = errors.New("regression")
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := check(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errDrop):
		fmt.Fprintln(stderr, "benchcheck:", err)
		return 1
	default:
		fmt.Fprintln(stderr, "benchcheck:", err)
		return 2
	}
}

type options struct {
	profile   string
	newPath   string
	basePath  string
	results   string
	tolerance float64
	anyProf   bool
	all       bool
}

func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("benchcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.profile, "profile", "", "check a one-file report instead of a matrix run: "+strings.Join(fileReportNames(), "|")+" (new: -results/PROFILE.json; base: that file as committed at HEAD)")
	fs.StringVar(&o.newPath, "new", "", "the new run's results.json, or a one-file report (engines.json, broker.json, groups.json, cluster.json, replication.json) (default: the newest run under -results)")
	fs.StringVar(&o.basePath, "base", "", "the run to compare with (default: the newest run of the same profile committed at HEAD under -results, other than -new; for a one-file report, the same file at HEAD)")
	fs.StringVar(&o.results, "results", "results", "results directory")
	fs.Float64Var(&o.tolerance, "tolerance", 0.15, "largest accepted drop of a ratio (0.15: 15 %)")
	fs.BoolVar(&o.anyProf, "any-profile", false, "accept a base run of another profile")
	fs.BoolVar(&o.all, "all", false, "fail on a drop of any ratio, not only the headline ones (the reference point's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || o.tolerance <= 0 || o.tolerance >= 1 {
		return fmt.Errorf("%w: want flags only and 0 < -tolerance < 1", errUsage)
	}
	if o.profile != "" || fileReports[reportOf(o.newPath)] != nil {
		return o.checkFile(ctx, stdout)
	}
	next, newDir, err := o.newRun()
	if err != nil {
		return err
	}
	base, baseName, err := o.baseRun(ctx, next, newDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "new:  %s (%s profile, commit %s)\nbase: %s (%s profile, commit %s)\n\n",
		next.Name, next.Profile.Name, next.Commit, baseName, base.Profile.Name, base.Commit)
	return o.verdict(stdout, report.Ratios(base), report.Ratios(next))
}

// verdict prints the comparison and fails on a headline drop.
func (o options) verdict(stdout io.Writer, base, next []bench.Ratio) error {
	changes, drops := bench.Compare(base, next, o.tolerance, o.all)
	if err := printChanges(stdout, changes); err != nil {
		return err
	}
	if drops > 0 {
		return fmt.Errorf("%w: %d ratio(s) dropped by more than %.0f %%", errDrop, drops, o.tolerance*100)
	}
	fmt.Fprintf(stdout, "\nno headline ratio dropped by more than %.0f %% (DROP fails the check; drop is reported only, -all to fail on it)\n", o.tolerance*100)
	return nil
}

// newRun is -new, or the newest run under -results.
func (o options) newRun() (*matrix.Run, string, error) {
	if o.newPath != "" {
		r, err := report.Load(o.newPath)
		return r, filepath.Base(filepath.Dir(o.newPath)), err
	}
	runs, dirs, _, err := report.Runs(o.results)
	if err != nil {
		return nil, "", err
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("%w: no run under %s (run go run ./cmd/bench first)", errUsage, o.results)
	}
	return runs[0], dirs[0], nil
}

// baseRun is -base, or the newest run committed at HEAD under -results with
// the new run's profile, other than the new run's directory.
func (o options) baseRun(ctx context.Context, next *matrix.Run, newDir string) (*matrix.Run, string, error) {
	if o.basePath != "" {
		r, err := report.Load(o.basePath)
		return r, o.basePath, err
	}
	committed, err := committedRuns(ctx, o.results)
	if err != nil {
		return nil, "", err
	}
	var best *matrix.Run
	var bestName string
	for name, r := range committed {
		if filepath.Base(filepath.Dir(name)) == newDir || (!o.anyProf && r.Profile.Name != next.Profile.Name) {
			continue
		}
		if best == nil || r.Started.After(best.Started) {
			best, bestName = r, name
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("%w: no committed %s-profile run under %s other than %s to compare with (-base to name one, -any-profile to accept another profile)",
			errUsage, next.Profile.Name, o.results, newDir)
	}
	return best, bestName + " at HEAD", nil
}

// inRepo returns the top of the git work tree holding path, and path
// relative to it.
func inRepo(ctx context.Context, path string) (top, rel string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	dir := abs
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		dir = filepath.Dir(abs)
	}
	top, err = git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("%w: %s is not in a git work tree: %v", errUsage, path, err)
	}
	top = strings.TrimSpace(top)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rel, err = filepath.Rel(top, abs)
	return top, rel, err
}

// committedRuns reads every results.json under dir as committed at HEAD.
func committedRuns(ctx context.Context, dir string) (map[string]*matrix.Run, error) {
	top, rel, err := inRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	list, err := git(ctx, top, "ls-tree", "-r", "--name-only", "HEAD", "--", filepath.ToSlash(rel))
	if err != nil {
		return nil, err
	}
	out := map[string]*matrix.Run{}
	for _, path := range strings.Fields(list) {
		if filepath.Base(path) != report.ResultsFile || strings.Count(strings.TrimPrefix(path, filepath.ToSlash(rel)+"/"), "/") != 1 {
			continue
		}
		data, err := git(ctx, top, "show", "HEAD:"+path)
		if err != nil {
			return nil, err
		}
		var r matrix.Run
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return nil, fmt.Errorf("%s at HEAD: %w", path, err)
		}
		out[path] = &r
	}
	return out, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func printChanges(w io.Writer, changes []bench.Change) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "status\tratio\tbase\tnew\tchange")
	num := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.3f", x)
	}
	for _, c := range changes {
		change := "–"
		if d := c.Delta(); !math.IsNaN(d) {
			change = fmt.Sprintf("%+.1f %%", d*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Status, c.Name, num(c.Base), num(c.New), change)
	}
	return tw.Flush()
}
