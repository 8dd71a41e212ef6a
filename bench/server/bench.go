package server

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/minikafka/minikafka/bench"
)

// Bench is what a benchmark of child-process clusters is configured with
// besides its own measurements: the brokers it starts, where their data
// and output go, and what its report says about how it ran.
type Bench struct {
	// Bin is cmd/broker; Sync the brokers' -sync policy; Args extra
	// broker flags.
	Bin  string
	Sync string
	Args []string
	// Dir holds the brokers' data, a directory per cluster, removed after
	// it.
	Dir string
	// Log gets progress lines; ServerLog the brokers' output. Nil
	// discards them.
	Log       io.Writer
	ServerLog io.Writer
	// Command and Setup are the report's record of how it ran.
	Command string
	Setup   []string
}

// Defaults fills what was left unset.
func (b *Bench) Defaults() {
	b.Sync = cmp.Or(b.Sync, DefaultSync)
	b.Log, b.ServerLog = cmp.Or(b.Log, io.Discard), cmp.Or(b.ServerLog, io.Discard)
}

// Begin makes Dir and records the start of the run.
func (b *Bench) Begin() (bench.Facts, error) {
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return bench.Facts{}, fmt.Errorf("benchmark directory: %w", err)
	}
	f := bench.Begin(b.Dir, b.Command)
	f.Setup = b.Setup
	return f, nil
}
