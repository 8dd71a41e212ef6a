package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/peer"
)

// NATS drives a NATS JetStream server with its own client (nats.go), run
// by the peers command as a child process per phase. A publish is one
// message, so every acknowledged message is a batch.
type NATS struct {
	// Bin is the built peers command.
	Bin  string
	Idle time.Duration
}

var _ Driver = NATS{}

func (n NATS) run(ctx context.Context, s *Server, mode string, spec Spec, records int64) (peer.Output, error) {
	idle := n.Idle
	if idle <= 0 {
		idle = 10 * time.Second
	}
	ph := peer.Phase{Addr: s.Addr(), Mode: mode, RecordBytes: spec.RecordBytes, InFlight: spec.InFlight,
		Duration: spec.Duration, MaxRecords: spec.Records(), Records: records, Idle: idle}
	cmd := exec.CommandContext(ctx, n.Bin, ph.Args()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res peer.Output
	if jerr := json.Unmarshal(out, &res); jerr != nil && err == nil {
		err = fmt.Errorf("decode %q: %w", strings.TrimSpace(string(out)), jerr)
	}
	if err != nil {
		return res, fmt.Errorf("peers nats-load -mode %s: %w: %s", mode, err, oneLine(stderr.String()))
	}
	return res, nil
}

// Prepare creates the stream.
func (n NATS) Prepare(ctx context.Context, s *Server, _ int32) error {
	_, err := n.run(ctx, s, peer.Create, Spec{}, 0)
	return err
}

// Produce runs the async publisher.
func (n NATS) Produce(ctx context.Context, s *Server, spec Spec) (Produced, error) {
	o, err := n.run(ctx, s, peer.Produce, spec, 0)
	var p Produced
	if o.Produce != nil {
		p.ProduceResult = *o.Produce
		p.Batches = o.Produce.Records // a message each
	}
	return p, err
}

// Tail publishes while a consumer reads new messages.
func (n NATS) Tail(ctx context.Context, s *Server, spec Spec) (load.EndToEndResult, error) {
	o, err := n.run(ctx, s, peer.Tail, spec, 0)
	var r load.EndToEndResult
	if o.Produce != nil {
		r.Produce = *o.Produce
	}
	if o.Consume != nil {
		r.Consume = *o.Consume
	}
	return r, err
}

// CatchUp reads every message from the start.
func (n NATS) CatchUp(ctx context.Context, s *Server, records int64) (load.ConsumeResult, error) {
	o, err := n.run(ctx, s, peer.CatchUp, Spec{}, records)
	if o.Consume == nil {
		return load.ConsumeResult{}, err
	}
	return *o.Consume, err
}

// Records is the stream's message count.
func (n NATS) Records(ctx context.Context, s *Server) (int64, error) {
	o, err := n.run(ctx, s, peer.Count, Spec{}, 0)
	return o.Records, err
}
