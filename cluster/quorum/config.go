package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// StateMachine is what the quorum replicates. Apply is called once per committed
// entry carrying a proposal, in index order, on the goroutine driving the Node.
//
// The StateMachine given to OpenNode must be empty: the Node restores it from
// the snapshot on disk, if any, and applies the committed entries after it.
type StateMachine interface {
	Apply(index uint64, payload []byte) error // an error stops the node: the state machine is broken
	Snapshot() ([]byte, error)                // the state as of the last index applied
	Restore(index uint64, data []byte) error  // replace the whole state with a snapshot's
}

// Defaults for zero NodeConfig fields.
const (
	DefaultElectionTicks   = 10
	DefaultSnapshotEntries = 10000
	DefaultMaxSizePerMsg   = 1 << 20
	DefaultMaxInflightMsgs = 256
	// DefaultMaxUncommittedBytes bounds what a leader accepts before it has
	// committed it: proposals beyond return ErrProposalDropped.
	DefaultMaxUncommittedBytes = 64 << 20
)

// NodeConfig configures a Node.
type NodeConfig struct {
	// NodeID is this controller's id, non-zero and one of Voters.
	NodeID uint64
	// Voters are the ids of every controller, identical on every node. They
	// are stored at bootstrap; a restart with a different list is refused
	// (ErrVotersChanged): the quorum does not reconfigure.
	Voters []uint64
	// ClusterID is stored at bootstrap and checked on every restart.
	ClusterID string
	// Dir holds the node's state (see the package documentation).
	Dir string
	// FS is where all I/O goes. Nil means the OS filesystem.
	FS vfs.FS
	// Engine is the registered engine name for the raft log ("segment",
	// "memory", ...). The program imports the engine's package. A log on an
	// engine that is not Durable cannot be reopened (memory: tests and sim
	// runs that never restart a node).
	Engine string
	// Rand is the only source of randomness (election timeouts, the
	// incarnation that tags proposals). Required: seed it.
	Rand *rand.Rand
	// ElectionTicks is E: a follower campaigns after [E, 2E) ticks without
	// hearing from a leader, and a leader is Active while a quorum answered
	// within E ticks. Default DefaultElectionTicks. The leader sends
	// heartbeats every tick.
	ElectionTicks int
	// SnapshotEntries: a snapshot is taken every SnapshotEntries applied
	// entries. Default DefaultSnapshotEntries.
	SnapshotEntries uint64
	// CatchUpEntries: after a snapshot, this many entries are kept behind it
	// so that a follower slightly behind catches up by log rather than by
	// snapshot. Default SnapshotEntries.
	CatchUpEntries uint64
	// MaxSizePerMsg bounds the entries' bytes in one append message.
	// Default DefaultMaxSizePerMsg.
	MaxSizePerMsg uint64
	// StateMachine receives the committed payloads.
	StateMachine StateMachine
	// Logger gets the node's notices; raft's own chatter goes to it at debug
	// level. Nil discards.
	Logger *slog.Logger
}

func (c NodeConfig) withDefaults() (NodeConfig, error) {
	if c.NodeID == 0 {
		return c, errors.New("quorum: NodeID is required (0 is reserved)")
	}
	voters, err := normalizeVoters(c.Voters)
	if err != nil {
		return c, fmt.Errorf("quorum: voters %v: %w", c.Voters, err)
	}
	c.Voters = voters
	if !slices.Contains(voters, c.NodeID) {
		return c, fmt.Errorf("quorum: node %d is not one of the voters %v", c.NodeID, voters)
	}
	if c.Dir == "" {
		return c, errors.New("quorum: Dir is required")
	}
	if c.Engine == "" {
		return c, errors.New("quorum: Engine is required")
	}
	if c.Rand == nil {
		return c, errors.New("quorum: Rand is required (a seeded source keeps runs replayable)")
	}
	if c.StateMachine == nil {
		return c, errors.New("quorum: StateMachine is required")
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = DefaultSnapshotEntries
	}
	if c.CatchUpEntries == 0 {
		c.CatchUpEntries = c.SnapshotEntries
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
