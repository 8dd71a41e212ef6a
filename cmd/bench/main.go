// Command bench is mini-kafka's one benchmark tool. A profile says what it
// measures and which report it writes under -out (results/ by default):
//
//	go run ./cmd/bench -profile engines   # results/engines.md: every engine against a raw-disk group-commit loop, in process
//	go run ./cmd/bench -profile broker    # results/broker.md: the broker per engine against kfake, and its peak RSS (bench/workloads/broker.yaml)
//	go run ./cmd/bench -profile groups    # results/groups.md: consumer group churn, settle time, cost of group traffic (bench/workloads/groups.yaml)
//	go run ./cmd/bench -profile cluster   # results/cluster.md: a three-broker cluster's failover, fencing, topic creation, restart at scale (bench/workloads/cluster.yaml)
//	go run ./cmd/bench -profile replication # results/replication.md: RF 3 against RF 1, leader kill and stop under load, catch-up, per engine (bench/workloads/replication.yaml)
//	go run ./cmd/bench -profile transactions # results/transactions.md: transactional against idempotent produce, coordinator kill -9, read_committed, per engine (bench/workloads/transactions.yaml)
//	go run ./cmd/bench -profile faults    # results/faults.md: the fault matrix, engines x faults under load, Jepsen's anomalies (root: network namespaces; bench/workloads/faults.yaml)
//	go run ./cmd/bench -profile reassign  # results/reassign.md: a partition reassignment under load per engine (bench/workloads/reassign.yaml)
//	go run ./cmd/bench -profile quick     # results/<run>/: the end-to-end matrix, a smoke run of about 2 minutes
//	go run ./cmd/bench -profile full      # results/<run>/: the end-to-end matrix, about 21 minutes on 2 cores
//	go run ./cmd/bench -profile P -render FILE   # the report again from an earlier run's JSON (a run directory for quick/full)
//	go run ./cmd/bench -profile P -help          # P's own flags
//	go run ./cmd/bench produce|consume|e2e -brokers B ...   # load any Kafka-compatible broker (load.go)
//
// The profiles that moved onto the one runner are workload files
// (bench/workloads/NAME.yaml, run by bench/runner, written in
// bench/result's schema); -profile path/to/file.yaml runs a workload that
// is not embedded, and -quick any of them as a short smoke run. The engines
// profile measures in this process (bench/logbench: each subject's
// workloads share one ingested log) and writes the same schema; the
// end-to-end matrix (quick, full) measures in its own package and renders
// its report with the same tables.
//
// Every profile records the same facts about its run (machine, disk, load
// average, commit, command line) and its figures as cells of repetitions,
// judges its targets, and writes a markdown report with the JSON it was
// rendered from; cmd/benchcheck compares a new run's ratios with the
// committed one. The profile registry is in profiles.go.
//
// The end-to-end matrix (bench/matrix) starts mini-kafka's broker once per
// cell over each storage engine, franz-go's kfake and NATS JetStream, and
// drives them with the same load: the concurrency sweep (1, 16, 256, 1024
// records in flight) at 1 KiB, acks=all, sync=always; the size sweep
// (100 B, 1 KiB, 16 KiB) at 256 in flight; many producers sharing the
// in-flight records; acks=1 and sync=interval; tail and catch-up reads; a
// kill -9 recovery per engine with 1 GiB of data (full). Besides
// results/<run>/ it rewrites the index results/README.md. The engines'
// certification (their conformance and crash suites) runs in CI, not here.
//
// Run it from the module root: the profiles that start brokers build
// ./cmd/broker once into a temporary directory (and the matrix builds
// bench/peers, a separate Go module holding the NATS server and client)
// and exec them as child processes; kfake is this binary's serve-kfake
// subcommand. Data goes to a temporary directory on this checkout's disk
// (-dir to choose another).
//
// A cell that fails (a server that does not start or dies, a full disk, an
// unknown engine) is reported with its phase and reason; the other cells
// go on, and the report marks the missing ones. SIGINT stops the run and
// still writes the report of what finished.
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

	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/broker/harness"
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
	switch {
	case len(args) > 0 && args[0] == harness.ServeKfakeCmd:
		// The benchmark runs kfake as a child process of its own binary,
		// like the broker, so that both are measured the same way.
		err = harness.ServeKfake(ctx, args[1:], stdout, stderr)
	case len(args) > 0 && loadCommands[args[0]].run != nil:
		err = loadCommands[args[0]].run(ctx, stdout, stderr, args[1:])
	case len(args) > 0 && args[0] == logbench.ChildCmd:
		// The engines profile kills engines in child processes of its own
		// binary (logbench.ServeChild).
		err = logbench.ServeChild(ctx, args[1:], stdout)
	default:
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
