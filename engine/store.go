package engine

import (
	"errors"
	"fmt"
	"strconv"
)

// A Store holds the partition logs of one data directory: the broker opens
// one per directory and asks it for logs, each a LogEngine that keeps every
// promise of the contract above. How a store keeps its logs is the engine's
// own: segment's is a directory of per-log directories (DirStore), pebble's
// and badger's one database whose keys are prefixed by the log's id, with
// one write-ahead log and one group commit for all of them.
//
// # The contract
//
//   - Create makes a new, empty log and returns its id. The id is the
//     store's to choose and is never handed out again by that store, not
//     even after the log is deleted, so a log deleted and created again
//     under the same name elsewhere (a topic deleted and recreated) is a
//     different log and never sees the old one's data. The log exists
//     durably when Create returns: Logs lists it after a crash.
//   - Open opens a log Create made earlier. ErrNoLog when the store has no
//     log with that id; ErrLogInUse when it is open already.
//   - Delete removes a log that is not open (ErrLogInUse otherwise). It is
//     durable when it returns: Logs never lists the log again, after a
//     crash either; the space it held is reclaimed afterwards, at a pace
//     (Options.Discard, or the store's own pacing), and a crash before the
//     end leaves the rest to the next open. Nothing another log holds is
//     touched.
//   - Logs lists every log in the store, open or not, in ascending id
//     order.
//   - Logs are isolated: nothing one log's calls do changes what another
//     reads, and deleting one while others append, sync and read changes
//     nothing for them.
//   - Close closes the logs still open (the caller should close each first:
//     a log's Close is where it syncs) and releases the store. Every call
//     after Close returns ErrClosed.
//
// A store opened for a caller that wants no background work (the
// simulator) must start none of its own beyond what its logs' engines do
// under the same options: a DirStore starts no goroutine and arms no
// timer.
//
// With Capabilities.SharedCommit, a Sync of any log makes every append to
// any log of the store made before it durable in the same round: the
// store has one write-ahead log and one group commit.
type Store interface {
	Create(o LogOptions) (LogID, LogEngine, error)
	Open(id LogID, o LogOptions) (LogEngine, error)
	Delete(id LogID) error
	Logs() ([]LogID, error)
	Close() error
}

// LogID names a log in a Store; see Store for the rules.
type LogID uint64

// String is the id as 16 hexadecimal digits, as DirStore names its
// directories.
func (id LogID) String() string { return fmt.Sprintf("%016x", uint64(id)) }

// ParseLogID is the inverse of LogID.String.
func ParseLogID(s string) (LogID, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("engine: log id %q: want 16 hexadecimal digits", s)
	}
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("engine: log id %q: %w", s, err)
	}
	return LogID(n), nil
}

// LogOptions are what may differ between the logs of one store; zero
// fields take the store's Options.
type LogOptions struct {
	// SegmentBytes, when positive, is this log's roll size (a topic's
	// segment.bytes) for engines that keep segment files.
	SegmentBytes int64
}

// apply returns o's fields over the store's options.
func (lo LogOptions) apply(o Options) Options {
	if lo.SegmentBytes > 0 {
		o.SegmentBytes = lo.SegmentBytes
	}
	return o
}

// Store errors; see Store.
var (
	// ErrNoLog: the store holds no log with that id (never created, or
	// deleted). The caller's record of the id is stale or damaged.
	ErrNoLog = errors.New("engine: no such log in the store")
	// ErrLogInUse: the log is open. Close it first, or use the open one.
	ErrLogInUse = errors.New("engine: log is open")
)

// Adopter is a Store that can take in, as it is, a directory in which its
// driver's Open keeps a log (a data directory of an older layout, where
// each partition's log was an engine of its own), by moving it: no copy.
// Reserve hands out an id for Adopt (no Create gets it); Adopt moves dir
// in as log id, durably, on the store's filesystem. An id reserved and
// never adopted is simply never used.
type Adopter interface {
	Reserve() (LogID, error)
	Adopt(id LogID, dir string) error
}

// Unwrapper is a LogEngine that wraps another (a store's handle on a
// log): Unwrap returns the one it wraps, so that the optional interfaces
// of the engine underneath are found through it (see As).
type Unwrapper interface {
	Unwrap() LogEngine
}

// As finds an optional interface T (BufferReader, say) on e or on
// the engines it wraps (Unwrapper), as errors.As finds an error.
func As[T any](e LogEngine) (T, bool) {
	for e != nil {
		if t, ok := e.(T); ok {
			return t, true
		}
		u, ok := e.(Unwrapper)
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	var zero T
	return zero, false
}

// OpenStore opens (or creates) the store of the engine registered under
// name in dir: its own (Driver.OpenStore), or a DirStore of its logs.
func OpenStore(name, dir string, opts Options) (Store, error) {
	d, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.OpenStoreIn(dir, opts)
}

// OpenStoreIn opens the driver's store in dir (see OpenStore).
func (d Driver) OpenStoreIn(dir string, opts Options) (Store, error) {
	if opts.CustomFS() && !d.Caps.CustomFS {
		return nil, fmt.Errorf("engine %s: custom filesystem: %w", d.Name, ErrUnsupported)
	}
	if opts.Inline && !d.Caps.Inline {
		return nil, fmt.Errorf("engine %s: inline (no goroutines): %w", d.Name, ErrUnsupported)
	}
	if d.OpenStore != nil {
		return d.OpenStore(dir, opts)
	}
	return OpenDirStore(d, dir, opts)
}

func isClosed(err error) bool { return errors.Is(err, ErrClosed) }
