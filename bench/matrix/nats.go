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
)

// PeerOutput is what the peers command (module bench/peers) prints as JSON
// for one load phase; its figures mean what they mean for the Kafka load
// (bench/load), measured the same way.
type PeerOutput struct {
	Produce *load.ProduceResult `json:"produce,omitempty"`
	Consume *load.ConsumeResult `json:"consume,omitempty"`
	// Records is the number of messages in the stream (mode count).
	Records int64 `json:"records"`
}

// Load modes of the peers command.
const (
	PeerCreate  = "create"  // create the stream
	PeerProduce = "produce" // closed-loop async publishes
	PeerTail    = "tail"    // produce while a consumer reads new messages
	PeerCatchUp = "catchup" // read every message from the start
	PeerCount   = "count"   // print the stream's message count
)

// PeerArgs is the peers command line for one phase.
func PeerArgs(addr, mode string, spec Spec, records int64, idle time.Duration) []string {
	return []string{"nats-load", "-addr", addr, "-mode", mode, "-stream", Topic,
		"-record-size", fmt.Sprint(spec.RecordBytes), "-in-flight", fmt.Sprint(spec.InFlight),
		"-duration", spec.Duration.String(), "-max-records", fmt.Sprint(spec.Records()),
		"-records", fmt.Sprint(records), "-idle", idle.String()}
}

// NATS drives a NATS JetStream server with its own client (nats.go), run
// by the peers command as a child process per phase. A publish is one
// message, so every acknowledged message is a batch.
type NATS struct {
	// Bin is the built peers command.
	Bin  string
	Idle time.Duration
}

var _ Driver = NATS{}

func (n NATS) run(ctx context.Context, s *Server, mode string, spec Spec, records int64) (PeerOutput, error) {
	idle := n.Idle
	if idle <= 0 {
		idle = 10 * time.Second
	}
	cmd := exec.CommandContext(ctx, n.Bin, PeerArgs(s.Addr(), mode, spec, records, idle)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res PeerOutput
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
	_, err := n.run(ctx, s, PeerCreate, Spec{}, 0)
	return err
}

// Produce runs the async publisher.
func (n NATS) Produce(ctx context.Context, s *Server, spec Spec) (Produced, error) {
	o, err := n.run(ctx, s, PeerProduce, spec, 0)
	var p Produced
	if o.Produce != nil {
		p.ProduceResult = *o.Produce
		p.Batches = o.Produce.Records
	}
	return p, err
}

// Tail publishes while a consumer reads new messages.
func (n NATS) Tail(ctx context.Context, s *Server, spec Spec) (load.EndToEndResult, error) {
	o, err := n.run(ctx, s, PeerTail, spec, 0)
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
	o, err := n.run(ctx, s, PeerCatchUp, Spec{}, records)
	if o.Consume == nil {
		return load.ConsumeResult{}, err
	}
	return *o.Consume, err
}

// Records is the stream's message count.
func (n NATS) Records(ctx context.Context, s *Server) (int64, error) {
	o, err := n.run(ctx, s, PeerCount, Spec{}, 0)
	return o.Records, err
}
