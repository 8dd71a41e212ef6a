package engine

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Capabilities are what an engine declares it can do beyond the contract.
// Test suites read them to skip, with a reason, what does not apply.
type Capabilities struct {
	// CustomFS: the engine does all of its I/O through Options.FS, so it can
	// run on a crashable in-memory filesystem.
	CustomFS bool
	// Durable: the log survives Close and reopen, and a crash after Sync.
	Durable bool
	// SharedCommit: the engine's Store has one write-ahead log and one
	// group commit for all its logs, so a Sync of any log makes every
	// append made before it to any log of the store durable.
	SharedCommit bool
	// Inline: the engine honours Options.Inline (no goroutine of its own;
	// it is a Flusher).
	Inline bool
}

// OpenFunc opens (or creates) the engine's log in dir.
type OpenFunc func(dir string, opts Options) (LogEngine, error)

// OpenStoreFunc opens (or creates) the engine's Store in dir.
type OpenStoreFunc func(dir string, opts Options) (Store, error)

// Driver is a registered engine.
type Driver struct {
	Name string
	Caps Capabilities
	Open OpenFunc
	// OpenStore opens the engine's store of many logs. Nil means a
	// DirStore: a directory of logs, each opened with Open in a
	// directory of its own.
	OpenStore OpenStoreFunc
	// OpenInStore, when set, is what a DirStore opens its logs with: Open
	// for a directory the store has claimed already, its own marker naming
	// the engine of every log in it. The log's directory exists (the store
	// made it, durably) and needs no marker of its own, so OpenInStore
	// neither checks nor writes one: it spares each log's creation the
	// marker's syncs and each open the marker's read. Nil: the DirStore
	// claims each log's directory (ClaimDir) and opens it with Open.
	OpenInStore OpenFunc
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Driver{}
)

// Register makes an engine available by name. It is meant for init functions;
// registering a name twice is a programming error and panics.
func Register(d Driver) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("engine: Register called twice for " + d.Name)
	}
	registry[d.Name] = d
}

// Lookup returns the driver registered under name.
func Lookup(name string) (Driver, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	d, ok := registry[name]
	if !ok {
		return Driver{}, fmt.Errorf("%w %q (registered: %v)", ErrUnknownEngine, name, namesLocked())
	}
	return d, nil
}

// Open opens the engine registered under name on dir.
func Open(name, dir string, opts Options) (LogEngine, error) {
	d, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if opts.CustomFS() && !d.Caps.CustomFS {
		return nil, fmt.Errorf("engine %s: custom filesystem: %w", name, ErrUnsupported)
	}
	if opts.Inline && !d.Caps.Inline {
		return nil, fmt.Errorf("engine %s: inline (no goroutines): %w", name, ErrUnsupported)
	}
	return d.Open(dir, opts)
}

// Names lists the registered engines, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string { return slices.Sorted(maps.Keys(registry)) }
