// Command loadgen drives mini-kafka, or any Kafka-compatible broker, with
// franz-go clients and reports throughput and latency (HdrHistogram
// percentiles) as text and JSON.
//
//	loadgen produce  -brokers B -topic T -records N [-record-size 100] [-rate R] ...
//	loadgen consume  -brokers B -topic T -records N
//	loadgen e2e      -brokers B -topic T -records N -rate R   (produce and consume together)
//
// Closed loop (the default) keeps -in-flight records outstanding per client;
// -rate switches to open loop, where latency counts from each record's
// intended send time, so a broker stall shows up in the percentiles instead
// of silently slowing the producer down.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, stdout, stderr io.Writer, args []string) error
}

// commands is filled by each command file's init.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("loadgen: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// run executes args (without the program name) and returns the exit code:
// 0 success, 1 failure, 2 bad usage.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "loadgen: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(ctx, stdout, stderr, args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "loadgen %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "loadgen %s: %v\n", c.name, err)
		return 1
	}
}

var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// parse parses a command's flags; it takes no positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadgen <command> [flags]   (loadgen <command> -h for its flags)")
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-13s %s\n", n, commands[n].summary)
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Stdout, os.Stderr, os.Args[1:]))
}
