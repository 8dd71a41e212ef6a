// Command peers runs the benchmark peers that are not Kafka-compatible,
// with their own clients, for cmd/bench. It lives in its own Go module
// (bench/peers) so that the peer servers are benchmark-only dependencies:
// the main module's go.mod, `go run ./cmd/broker` and `go test ./...` at
// the root never build them.
//
//	peers nats-serve -dir D [-sync always|interval] [-sync-interval 100ms]
//	peers nats-load  -addr HOST:PORT -mode create|produce|tail|catchup|count [flags]
//
// nats-serve embeds a NATS server with JetStream on file storage in D,
// prints its host:port on the first line of stdout and serves until SIGTERM
// or SIGINT; -sync always is JetStream's `sync_interval: always` (every
// write is fsynced before it is acknowledged). It runs as its own process,
// as mini-kafka's broker does in the benchmark, so that its CPU, memory and
// I/O are its own.
//
// nats-load runs one load phase with the nats.go JetStream client and
// prints its figures as JSON (peer.Output: the same fields, measured
// the same way, as the Kafka load of bench/load).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: peers nats-serve|nats-load [flags]")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "nats-serve":
		return natsServe(ctx, args[1:], stdout, stderr)
	case "nats-load":
		return natsLoad(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}
