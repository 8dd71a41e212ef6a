package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/progress"
	"github.com/minikafka/minikafka/bench/workloads"
)

// profile is one plan of the command: what it measures and the report it
// writes under -out. Each registers itself in an init of its own file; a
// new report is a new profile.
type profile struct {
	name    string
	summary string
	// writes is what the profile writes under -out, for -help.
	writes string
	// flags registers the profile's own flags on fs and returns the plan
	// they configure once fs is parsed.
	flags func(fs *flag.FlagSet) plan
}

// plan is a profile configured by its flags.
type plan interface {
	// measure runs the plan and writes its report under e.out.
	measure(ctx context.Context, e *env) error
	// render writes the report again from the results file (or run
	// directory) at path, measuring nothing.
	render(path string, e *env) error
}

var profiles = map[string]profile{}

func register(p profile) {
	if _, dup := profiles[p.name]; dup {
		panic("bench: profile registered twice: " + p.name)
	}
	profiles[p.name] = p
}

func profileNames() []string { return slices.Sorted(maps.Keys(profiles)) }

// defaultProfile is the one a bare `go run ./cmd/bench` runs: the smoke
// run of the end-to-end matrix.
const defaultProfile = "quick"

// env is what every profile shares: the common flags and the helpers
// built on them.
type env struct {
	profile  string
	out      string
	dir      string
	progress bool
	renderAt string
	// command is the command line as the reports quote it.
	command string
	stderr  io.Writer
	// given are the flags set on the command line (a smoke flag changes
	// only the others).
	given map[string]bool
	// cleanups run when the command ends (built binaries, data).
	cleanups []func()
}

// parse reads the command line: -profile first, to know which flags the
// rest may hold, then everything.
func parse(args []string, stderr io.Writer) (*env, plan, error) {
	e := &env{profile: profileArg(args), stderr: stderr}
	p, ok := profiles[e.profile]
	if strings.HasSuffix(e.profile, ".yaml") {
		w, err := workloads.Load(e.profile)
		if err != nil {
			return nil, nil, usageErr("-profile %s: %v", e.profile, err)
		}
		p, ok = workloadProfile(w), true
	}
	if !ok {
		return nil, nil, usageErr("-profile %q: want one of %s", e.profile, strings.Join(profileNames(), ", "))
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&e.profile, "profile", defaultProfile, "what to measure: "+strings.Join(profileNames(), "|"))
	fs.StringVar(&e.out, "out", "results", "results directory the report goes under")
	fs.StringVar(&e.dir, "dir", "", "parent of the data directories (default: a temporary directory in the current one, on this checkout's disk, which is the disk measured)")
	fs.BoolVar(&e.progress, "progress", progress.IsTerminal(stderr), "progress bars on stderr")
	fs.StringVar(&e.renderAt, "render", "", "measure nothing: write the profile's report again from this earlier results file (or run directory)")
	pl := p.flags(fs)
	fs.Usage = func() { usage(fs, p) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, nil, usageErr("unexpected arguments %q", fs.Args())
	}
	e.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { e.given[f.Name] = true })
	e.command = strings.TrimSpace("go run ./cmd/bench " + strings.Join(args, " "))
	return e, pl, nil
}

// profileArg finds -profile's value without knowing the other flags.
func profileArg(args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "profile" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return defaultProfile
}

func usage(fs *flag.FlagSet, p profile) {
	w := fs.Output()
	fmt.Fprintln(w, "usage: go run ./cmd/bench [-profile NAME] [flags]")
	fmt.Fprintln(w, "\nprofiles:")
	for _, n := range profileNames() {
		q := profiles[n]
		fmt.Fprintf(w, "  %-8s %s; writes %s\n", n, q.summary, q.writes)
	}
	fmt.Fprintln(w, "\nload commands: go run ./cmd/bench COMMAND -brokers B [flags] (COMMAND -help for its flags)")
	for _, n := range slices.Sorted(maps.Keys(loadCommands)) {
		fmt.Fprintf(w, "  %-8s %s\n", n, loadCommands[n].summary)
	}
	fmt.Fprintf(w, "\nflags (with -profile %s; -profile NAME -help for another's):\n", p.name)
	fs.PrintDefaults()
}

// run executes a parsed command line.
func (e *env) run(ctx context.Context, pl plan) error {
	defer func() {
		for i := len(e.cleanups) - 1; i >= 0; i-- {
			e.cleanups[i]()
		}
	}()
	// Made before measuring: a run must not end in a report it cannot write.
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	if e.renderAt != "" {
		return pl.render(e.renderAt, e)
	}
	return pl.measure(ctx, e)
}

// dataDir makes a fresh temporary directory under -dir (or the current
// directory), removed when the command ends.
func (e *env) dataDir() (string, error) {
	parent := e.dir
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".bench-data-")
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	abs, err := filepath.Abs(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("data dir: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { os.RemoveAll(abs) })
	return abs, nil
}

// brokerProcesses prepares a run of cmd/broker child processes: a fresh
// data directory, the file their output goes to, and the binary (bin, or
// ./cmd/broker built now when bin is "").
func (e *env) brokerProcesses(ctx context.Context, bin string) (dir string, logs io.Writer, _ string, err error) {
	if dir, err = e.dataDir(); err != nil {
		return "", nil, "", err
	}
	if logs, err = e.serverLog(dir); err != nil {
		return "", nil, "", err
	}
	if bin == "" {
		if bin, err = buildBrokerAt(ctx, e, ""); err != nil {
			return "", nil, "", err
		}
	}
	return dir, logs, bin, nil
}

// serverLog is a file in dir for the servers' output. It shares the
// data's filesystem: once that is full a failing write must not close the
// servers' stderr pipes (they would die of SIGPIPE instead of reporting
// the full disk), so its writes never fail.
func (e *env) serverLog(dir string) (io.Writer, error) {
	f, err := os.Create(filepath.Join(dir, "servers.log"))
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { f.Close() })
	return bestEffort{f}, nil
}

// bar draws progress bars on stderr when -progress is set.
func (e *env) bar(bytes bool) bench.Bar {
	if !e.progress {
		return bench.NoBar
	}
	return progress.NewBar(e.stderr, bytes)
}

// binDir is a temporary directory for built programs, removed at the end.
func (e *env) binDir() (string, error) {
	tmp, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		return "", fmt.Errorf("binaries: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { os.RemoveAll(tmp) })
	return tmp, nil
}

// self is this command's binary, which serves kfake (serve-kfake).
func self() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("own binary for the kfake child: %w", err)
	}
	return p, nil
}

// bestEffort writes what it can and never fails.
type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	_, _ = b.w.Write(p)
	return len(p), nil
}
