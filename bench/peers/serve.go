package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServe runs an embedded NATS server with JetStream until ctx ends.
func natsServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nats-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "JetStream store directory")
	sync := fs.String("sync", "always", "always (fsync every write before acknowledging it) or interval")
	interval := fs.Duration("sync-interval", 100*time.Millisecond, "fsync period under -sync interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts, err := serverOptions(*dir, *sync, *interval)
	if err != nil {
		return err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	s.Start()
	defer func() {
		s.Shutdown()
		s.WaitForShutdown()
	}()
	if !s.ReadyForConnections(time.Minute) {
		return errors.New("nats server: not ready within a minute")
	}
	if !s.JetStreamEnabled() {
		return errors.New("nats server: JetStream did not start")
	}
	fmt.Fprintln(stdout, s.Addr().String())
	<-ctx.Done()
	return nil
}

// serverOptions are the benchmark's server: loopback, a free port, file
// storage under dir, no logging, no signal handling of its own.
func serverOptions(dir, sync string, interval time.Duration) (*server.Options, error) {
	if dir == "" {
		return nil, errors.New("-dir is required")
	}
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
		// Large records at high concurrency: the default 1 MiB payload
		// limit is enough, but pending buffers should not stall clients.
		MaxPayload: 8 << 20,
	}
	switch sync {
	case "always":
		opts.SyncAlways = true
	case "interval":
		if interval <= 0 {
			return nil, fmt.Errorf("-sync-interval %v: want a positive duration", interval)
		}
		opts.SyncInterval = interval
	default:
		return nil, fmt.Errorf("-sync %q: want always or interval", sync)
	}
	return opts, nil
}
