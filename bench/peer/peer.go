// Package peer is the contract between the end-to-end matrix
// (bench/matrix), which runs the benchmark peers that are not
// Kafka-compatible, and the peers command (module bench/peers) that is
// them: the command line of one load phase and the JSON it prints. It
// depends on nothing heavier than bench/load, so that the peers module
// builds no broker or engine.
package peer

import (
	"fmt"
	"time"

	"github.com/minikafka/minikafka/bench/load"
)

// Topic is the benchmark topic (Kafka) or stream (JetStream).
const Topic = "bench"

// Output is what the peers command prints as JSON for one load phase;
// its figures mean what they mean for the Kafka load (bench/load),
// measured the same way.
type Output struct {
	Produce *load.ProduceResult `json:"produce,omitempty"`
	Consume *load.ConsumeResult `json:"consume,omitempty"`
	// Records is the number of messages in the stream (mode count).
	Records int64 `json:"records"`
}

// Load modes of the peers command.
const (
	Create  = "create"  // create the stream
	Produce = "produce" // closed-loop async publishes
	Tail    = "tail"    // produce while a consumer reads new messages
	CatchUp = "catchup" // read every message from the start
	Count   = "count"   // print the stream's message count
)

// Phase is one load phase of the peers command.
type Phase struct {
	Addr        string
	Mode        string
	RecordBytes int
	InFlight    int
	Duration    time.Duration
	// MaxRecords caps a produce phase (0: none); Records is what a
	// catch-up reads.
	MaxRecords int64
	Records    int64
	Idle       time.Duration
}

// Args is the peers command line for the phase.
func (p Phase) Args() []string {
	return []string{"nats-load", "-addr", p.Addr, "-mode", p.Mode, "-stream", Topic,
		"-record-size", fmt.Sprint(p.RecordBytes), "-in-flight", fmt.Sprint(p.InFlight),
		"-duration", p.Duration.String(), "-max-records", fmt.Sprint(p.MaxRecords),
		"-records", fmt.Sprint(p.Records), "-idle", p.Idle.String()}
}
