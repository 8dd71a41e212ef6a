package main

import (
	"context"
	"io"

	"github.com/minikafka/minikafka/bench/server"
)

func init() {
	register(command{
		name:    server.ServeKfakeCmd,
		summary: "run franz-go's in-memory fake cluster (one broker) until interrupted; prints its host:port",
		hidden:  true,
		run: func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			return server.ServeKfake(ctx, args, stdout, stderr)
		},
	})
}
