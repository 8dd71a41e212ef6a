// Command bench is mini-kafka's one benchmark tool. A profile says what it
// measures and which report it writes under -out (results/ by default);
// `go run ./cmd/bench -h` lists them, and the README's Benchmarks section
// says what each report holds:
//
//	go run ./cmd/bench -profile NAME [-quick]   # measure, write the report and its JSON
//	go run ./cmd/bench -profile NAME -help      # NAME's own flags
//	go run ./cmd/bench -profile NAME -render FILE   # the report again from an earlier run's JSON
//	go run ./cmd/bench -profile path/to/file.yaml   # a workload that is not embedded
//	go run ./cmd/bench produce|consume|e2e -brokers B ...   # load any Kafka-compatible broker (load.go)
//
// The profiles on the one runner are workload files (bench/workloads,
// run by bench/runner); the engines profile measures in this process
// (bench/logbench); the end-to-end matrix (quick, the default, and full)
// in bench/matrix. All of them record the same facts about the run and
// write bench/result's tables; cmd/benchcheck compares a new run's ratios
// with the committed one. The registry is in profiles.go.
//
// Run it from the module root: the profiles that start brokers build
// ./cmd/broker once into a temporary directory (the matrix also builds
// bench/peers, a separate module holding NATS) and run them as child
// processes; kfake is this binary's serve-kfake subcommand. Data goes to
// a temporary directory on this checkout's disk (-dir to choose another).
// A cell that fails is reported with its phase and reason and the others
// go on; SIGINT stops the run and still writes the report of what
// finished.
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
