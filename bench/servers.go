package bench

import (
	"cmp"
	"fmt"
	"io"
	"os"
)

// Servers is what a benchmark of child-process clusters is configured
// with besides its own measurements: the brokers it starts, where their
// data and output go, and what its report says about how it ran.
type Servers struct {
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
func (b *Servers) Defaults() {
	b.Sync = cmp.Or(b.Sync, "always")
	b.Log, b.ServerLog = cmp.Or(b.Log, io.Discard), cmp.Or(b.ServerLog, io.Discard)
}

// Begin makes Dir and records the start of the run.
func (b *Servers) Begin() (Facts, error) {
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return Facts{}, fmt.Errorf("benchmark directory: %w", err)
	}
	f := Begin(b.Dir, b.Command)
	f.Setup = b.Setup
	return f, nil
}
