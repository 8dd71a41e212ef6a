package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/broker/harness"
)

// Server is a running server under test (see broker/harness).
type Server = harness.Server

// Target is a server kind the matrix measures.
type Target struct {
	TargetInfo
	// CountsFsyncs: the server's /metrics counts its sync rounds (a broker
	// over a durable engine: each reports them through engine.Observer).
	CountsFsyncs bool
	// Start starts the server on dir under the sync policy ("always" or
	// "interval"). Starting again on the same dir is a restart.
	Start harness.Starter
	// Driver runs the client load against it.
	Driver Driver
}

// Driver runs load phases against a server. Every phase returns what it
// measured even when it also returns an error.
type Driver interface {
	// Prepare creates the topic (stream) the phases use.
	Prepare(ctx context.Context, s *Server, partitions int32) error
	// Produce runs a closed-loop producer for the spec.
	Produce(ctx context.Context, s *Server, spec Spec) (Produced, error)
	// Tail produces for the spec while a consumer reads at the log end.
	Tail(ctx context.Context, s *Server, spec Spec) (load.EndToEndResult, error)
	// CatchUp reads every record from the start of the log.
	CatchUp(ctx context.Context, s *Server, records int64) (load.ConsumeResult, error)
	// Records is the number of records in the log.
	Records(ctx context.Context, s *Server) (int64, error)
}

// Spec is one produce phase.
type Spec struct {
	Workload
	Duration time.Duration
	// MaxBytes caps the phase's payload (0: no cap).
	MaxBytes int64
	// Progress, when set, gets the acknowledged payload bytes as they grow.
	Progress func(bytes int64)
	// TrackAcked asks for Produced.Acked.
	TrackAcked bool
}

// Records is the record cap that MaxBytes implies (0: none).
func (s Spec) Records() int64 {
	if s.MaxBytes <= 0 || s.RecordBytes <= 0 {
		return 0
	}
	return max(1, s.MaxBytes/int64(s.RecordBytes))
}

// Produced is what a produce phase measured.
type Produced struct {
	load.ProduceResult
	// Acked is, per partition, the offset just past the highest
	// acknowledged record; nil when the driver does not track it.
	Acked map[int32]int64
}

// errExited is the cause a phase's context ends with when its server died.
var errExited = errors.New("the server process exited")

// watch returns a context that ends, with errExited as its cause, as soon
// as the server's process is gone: a dead server fails its phase at once
// instead of after the clients' timeouts.
func watch(ctx context.Context, s *Server) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
		case <-s.Exited():
			cancel(errExited)
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// phaseErr words a phase's failure, naming a dead server as the cause.
func phaseErr(ctx context.Context, phase string, err error) error {
	if errors.Is(context.Cause(ctx), errExited) {
		return fmt.Errorf("%s: %w", phase, errExited)
	}
	return fmt.Errorf("%s: %w", phase, err)
}

// oneLine keeps an error message on one line for tables.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 700 {
		s = s[:700] + "…"
	}
	return s
}
