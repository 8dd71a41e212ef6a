// Command bench is the end-to-end engine comparison: it starts mini-kafka's
// broker once per cell over each storage engine, franz-go's kfake and NATS
// JetStream, drives them with the same load, and writes
// results/<run>/report.md, results.json and PNG charts, and the index
// results/README.md.
//
//	go run ./cmd/bench -profile quick     # a smoke run: about 2 minutes (under 3)
//	go run ./cmd/bench -profile full      # the full matrix: about 25 minutes on 2 cores (under 45)
//	go run ./cmd/bench -render results/R  # the report and charts again from R/results.json
//
// What a profile runs (bench/matrix.Profiles): the concurrency sweep (1, 16,
// 256, 1024 records in flight) at 1 KiB, acks=all, sync=always; the size
// sweep (100 B, 1 KiB, 16 KiB) at 256 in flight; acks=1 and sync=interval
// at 1 KiB and 256 in flight; tail and catch-up reads; a kill -9 recovery
// per engine with 1 GiB of data (full); the engines' certification suites.
// The quick profile runs a subset with shorter phases.
//
// Run it from the module root: it builds ./cmd/broker once into a
// temporary directory, and bench/peers (a separate Go module holding the
// NATS server and client) with `go build` in that directory, and execs
// them as child processes. Data goes to a temporary directory on this
// checkout's disk (-dir to choose another).
//
// A cell that fails (a server that does not start or dies, a full disk, an
// unknown engine) is reported with its phase and reason; the other cells
// go on, and the report marks the missing ones. SIGINT stops the run and
// still writes the report of what finished.
//
// Besides results/<run>/, it rewrites the index results/README.md and, in
// README.md, the block between report.MarkBegin and report.MarkEnd (when
// the README has those lines) with the newest full run's summary.
// cmd/benchcheck compares a run's ratios with the last committed run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/minikafka/minikafka/bench/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code: 0 success, 1
// failure, 2 bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 && args[0] == server.ServeKfakeCmd {
		// The benchmark runs kfake as a child process of its own binary,
		// like the broker, so that both are measured the same way.
		err = server.ServeKfake(ctx, args[1:], stdout, stderr)
	} else {
		var e *env
		var pl plan
		if e, pl, err = parse(args, stderr); err == nil {
			err = e.run(ctx, pl)
		}
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
}

var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
