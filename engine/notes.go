package engine

// Notes describe an engine's design in the words the benchmark reports
// quote beside the figures they explain, so that a report's prose about
// an engine is written where the engine is, by whoever changes it. Each
// field is a sentence or a clause in lower case that reads after the
// engine's name has been said ("segment: ..."); an empty field says
// nothing about that aspect.
type Notes struct {
	// WritePath is how an append becomes durable, the group commit
	// included.
	WritePath string `json:"write_path,omitempty"`
	// CommitCost is what one durable commit costs the disk in flushes.
	CommitCost string `json:"commit_cost,omitempty"`
	// ReadPath is how a read finds and copies stored batches.
	ReadPath string `json:"read_path,omitempty"`
	// Writes is what reaches the disk per payload byte, and why.
	Writes string `json:"writes,omitempty"`
	// WriteAmp is the bytes the design writes per payload byte once in
	// steady state (0: no expectation); a report flags a measured figure
	// well above it.
	WriteAmp float64 `json:"write_amp,omitempty"`
	// Stalls are where stretches without acknowledgements may come from
	// (a latency tail).
	Stalls string `json:"stalls,omitempty"`
	// CPU is the per-record work that shows when the disk is not the
	// limit.
	CPU string `json:"cpu,omitempty"`
	// Memory is what the engine holds in memory.
	Memory string `json:"memory,omitempty"`
	// Recovery is what opening a log after a kill -9 does.
	Recovery string `json:"recovery,omitempty"`
	// IntervalLoss is why a process kill under SyncInterval can take
	// acknowledged records; empty when it cannot.
	IntervalLoss string `json:"interval_loss,omitempty"`
}
