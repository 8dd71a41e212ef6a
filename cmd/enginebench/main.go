// Command enginebench measures every storage engine side by side with a
// raw-disk baseline, in one process, and writes results/engines.md and
// results/engines.json:
//
//	go run ./cmd/enginebench -out results
//
// -quick runs the same pipeline on small sizes (a smoke test, not a result);
// -render results/engines.json rebuilds engines.md from an earlier run.
// The run drops its data from the page cache between writing and reading;
// as root it may also drop the whole page cache when that is not enough.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/logbench"

	_ "github.com/minikafka/minikafka/engines/all"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("enginebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		quick    = fs.Bool("quick", false, "small sizes and one repetition: a smoke run, not a result")
		engines  = fs.String("engines", "", "comma-separated subjects to measure (default: all of "+strings.Join(logbench.AllSubjects(), ",")+")")
		reps     = fs.Int("reps", 0, "repetitions of each figure (default 3, 1 with -quick)")
		records  = fs.Int64("records", 0, "records of the bulk ingest (default 1000000, 20000 with -quick)")
		appendD  = fs.Duration("append-time", 0, "duration of each durable-append figure (default 5s, 100ms with -quick)")
		probe    = fs.Duration("probe", -1, "how long to measure the device's background writes before the run (default 3s, 0 with -quick)")
		out      = fs.String("out", "results", "directory for engines.md and engines.json")
		dir      = fs.String("dir", "", "where the scratch data goes (default: the system temporary directory); its disk is what is measured")
		progress = fs.Bool("progress", true, "show a progress bar on stderr")
		render   = fs.String("render", "", "measure nothing: re-render engines.md in -out from this engines.json of an earlier run")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *render != "" {
		return rerender(*render, *out, stderr)
	}
	cfg := logbench.Default()
	if *quick {
		cfg = logbench.Quick()
	}
	if *engines != "" {
		cfg.Subjects = strings.Split(*engines, ",")
	}
	if *reps > 0 {
		cfg.Reps = *reps
	}
	if *records > 0 {
		cfg.Records = *records
	}
	if *appendD > 0 {
		cfg.AppendDuration = *appendD
	}
	if *probe >= 0 {
		cfg.Probe = *probe
	}
	cfg.Dir = *dir
	if *progress {
		cfg.Progress = stderr
	}
	res, err := logbench.Run(cfg)
	if err != nil {
		return err
	}
	res.Command = commandLine(args)
	res.Commit = bench.GitCommit(".")
	if err := bench.WriteJSON(filepath.Join(*out, "engines.json"), res); err != nil {
		return err
	}
	return writeReport(res, *out, stderr)
}

func writeReport(res *logbench.Results, out string, stderr io.Writer) error {
	md := filepath.Join(out, "engines.md")
	if err := bench.WriteFile(md, logbench.Report(res).Markdown()); err != nil {
		return err
	}
	for _, t := range res.Targets {
		fmt.Fprintln(stderr, t)
	}
	fmt.Fprintf(stderr, "wrote %s\n", md)
	return nil
}

// rerender rebuilds the markdown report of an earlier run from its JSON, so
// that a change to the report's layout needs no new measurement. The
// targets are evaluated again from the samples.
func rerender(jsonPath, out string, stderr io.Writer) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var res logbench.Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	res.Targets = logbench.Evaluate(&res)
	return writeReport(&res, out, stderr)
}

// commandLine is how the run was started: `go run ./cmd/enginebench` when
// the binary lives in go run's build cache, else the binary's name.
func commandLine(args []string) string {
	prog := filepath.Base(os.Args[0])
	if strings.Contains(os.Args[0], "go-build") {
		prog = "go run ./cmd/enginebench"
	}
	return strings.TrimSpace(prog + " " + strings.Join(args, " "))
}
