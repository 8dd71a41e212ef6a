package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/broker"
	"github.com/minikafka/minikafka/bench/proc"
	"github.com/minikafka/minikafka/bench/server"
)

func init() {
	register(command{
		name:    "bench-broker",
		summary: "the broker benchmark: our broker per engine against kfake, writes results/broker.md",
		run:     runBenchBroker,
	})
}

type benchFlags struct {
	out        string
	dir        string
	engines    string
	rssEngines string
	brokerBin  string
	brokerArgs string
	syncPolicy string
	quick      bool
	progress   bool
	cfg        broker.Config
}

func runBenchBroker(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	var f benchFlags
	fs := flag.NewFlagSet("bench-broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.out, "out", "results", "directory for broker.md and broker.json")
	fs.StringVar(&f.dir, "dir", "", "parent of the servers' data directories (default: a temporary directory here, so the data sits on this checkout's disk)")
	fs.StringVar(&f.engines, "engines", "segment,pebble,badger", "engines to measure against kfake")
	fs.StringVar(&f.rssEngines, "rss-engines", "segment", "engines for the peak-RSS run (-rss-records through each)")
	fs.StringVar(&f.brokerBin, "broker-bin", "", "broker binary (default: go build ./cmd/broker)")
	fs.StringVar(&f.brokerArgs, "broker-args", "", "extra broker flags, space-separated")
	fs.StringVar(&f.syncPolicy, "sync", "always", "broker -sync policy")
	fs.Int64Var(&f.cfg.Records, "records", broker.DefaultRecords, "records per throughput repetition")
	fs.Int64Var(&f.cfg.RSSRecords, "rss-records", broker.DefaultRSSRecords, "records through the broker in the peak-RSS run")
	fs.IntVar(&f.cfg.RecordBytes, "record-size", broker.DefaultRecordBytes, "value bytes per record")
	partitions := fs.Int("partitions", broker.DefaultPartitions, "partitions of the benchmark topic")
	fs.IntVar(&f.cfg.Reps, "reps", broker.DefaultReps, "repetitions per server")
	fs.IntVar(&f.cfg.InFlight, "in-flight", 0, "producer records in flight (0: franz-go's default)")
	fs.BoolVar(&f.quick, "quick", false, "smoke run: 50k records, 100k for RSS, 1 repetition (explicit flags win)")
	fs.BoolVar(&f.progress, "progress", bench.IsTerminal(stderr), "progress bars on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	f.cfg.Partitions = int32(*partitions)
	if f.quick {
		// Smaller sizes, unless given explicitly.
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		if !set["records"] {
			f.cfg.Records = 50_000
		}
		if !set["rss-records"] {
			f.cfg.RSSRecords = 100_000
		}
		if !set["reps"] {
			f.cfg.Reps = 1
		}
	}
	f.cfg.Command = "loadgen bench-broker " + strings.Join(args, " ")
	return f.run(ctx, stderr)
}

func (f *benchFlags) run(ctx context.Context, stderr io.Writer) error {
	dir := f.dir
	if dir == "" {
		tmp, err := os.MkdirTemp(".", ".brokerbench-")
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("own binary for the kfake child: %w", err)
	}
	// A broker that does not build fails its cells, not the run: kfake's
	// figures are still worth a report.
	var bin string
	var buildErr error
	if len(splitList(f.engines))+len(splitList(f.rssEngines)) > 0 {
		var cleanup func()
		bin, cleanup, buildErr = f.brokerBinary(ctx, stderr)
		if buildErr != nil {
			fmt.Fprintln(stderr, buildErr)
		} else {
			defer cleanup()
		}
	}
	logs, err := os.Create(filepath.Join(dir, "servers.log"))
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer logs.Close()

	kf := kfakeTarget(self, f.cfg.Partitions, logs)
	f.cfg.Targets = []broker.Target{kf}
	for _, e := range splitList(f.engines) {
		f.cfg.Targets = append(f.cfg.Targets, f.brokerTarget(bin, buildErr, e, logs))
	}
	for _, e := range splitList(f.rssEngines) {
		f.cfg.RSSTargets = append(f.cfg.RSSTargets, f.brokerTarget(bin, buildErr, e, logs))
	}
	f.cfg.Dir, f.cfg.Log = dir, stderr
	brokerDesc := "broker (built from ./cmd/broker)"
	switch {
	case f.brokerBin != "":
		brokerDesc = f.brokerBin
	case buildErr != nil:
		brokerDesc = "broker (did not build)"
	}
	f.cfg.Setup = []string{
		"kfake: `loadgen serve-kfake` as a child process (franz-go kfake, one broker, in memory, never fsyncs)",
		fmt.Sprintf("broker: `%s %s` as a child process, fresh for every engine and repetition", brokerDesc, strings.Join(f.brokerArgv("ENGINE", "DIR", "ADDR"), " ")),
		"client: franz-go in the benchmark process; the servers run in their own processes on the same machine",
	}
	if f.progress {
		f.cfg.Bar = func(what string, total int64) (func(int64), func()) { return bar(true, stderr, what, total) }
	}
	res, err := broker.Run(ctx, f.cfg)
	if res != nil {
		if werr := res.Write(f.out); werr != nil {
			return werr
		}
		for _, c := range res.Checks() {
			fmt.Fprintf(stderr, "%-4s  %s: %s (goal %s)\n", c.Verdict, c.Name, c.Measured, c.Goal)
		}
		fmt.Fprintf(stderr, "wrote %s\n", filepath.Join(f.out, "broker.md"))
	}
	return err
}

// brokerBinary returns -broker-bin, or builds ./cmd/broker into a temporary
// directory.
func (f *benchFlags) brokerBinary(ctx context.Context, stderr io.Writer) (string, func(), error) {
	if f.brokerBin != "" {
		return f.brokerBin, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "brokerbench-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("broker binary: %w", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	bin := filepath.Join(tmp, "broker")
	fmt.Fprintln(stderr, "building ./cmd/broker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/broker")
	out, err := cmd.CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build ./cmd/broker (run from the module root, or pass -broker-bin): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, cleanup, nil
}

func (f *benchFlags) brokerArgv(engine, dir, addr string) []string {
	argv := []string{"-engine", engine, "-dir", dir, "-addr", addr, "-advertised-addr", addr,
		"-sync", f.syncPolicy, "-partitions", fmt.Sprint(f.cfg.Partitions)}
	return append(argv, strings.Fields(f.brokerArgs)...)
}

func (f *benchFlags) brokerTarget(bin string, buildErr error, engine string, logs io.Writer) broker.Target {
	return broker.Target{Name: engine, Start: func(ctx context.Context, dir string) (broker.Server, error) {
		if buildErr != nil {
			return nil, buildErr
		}
		addr, err := proc.FreeAddr()
		if err != nil {
			return nil, err
		}
		return proc.Start(ctx, proc.Config{Path: bin, Args: f.brokerArgv(engine, dir, addr), Addr: addr, Log: logs})
	}}
}

func kfakeTarget(self string, partitions int32, logs io.Writer) broker.Target {
	return broker.Target{Name: "kfake", Reference: true, Start: func(ctx context.Context, _ string) (broker.Server, error) {
		return proc.Start(ctx, proc.Config{Path: self, Args: server.KfakeArgs(partitions), Log: logs})
	}}
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
