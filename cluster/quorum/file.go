package quorum

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// File names under NodeConfig.Dir; see the package documentation.
const (
	metaFile      = "META"
	hardStateFile = "HARDSTATE"
	snapshotFile  = "SNAPSHOT"
	logDir        = "log"
)

// Magic numbers of the checksummed files (engine.WriteChecked). Format
// constants never change.
const (
	metaMagic      = "MKQM"
	hardStateMagic = "MKQH"
	snapshotMagic  = "MKQS"
)

// ErrCorrupt: a quorum file fails its checksum or framing, or the files
// contradict each other. The node cannot start; an operator must repair or
// replace its directory (a controller with an empty directory rejoins by
// snapshot only if the others still form a quorum).
var ErrCorrupt = errors.New("quorum: corrupt raft state")

// writeFile replaces path atomically with payload framed under magic.
func writeFile(fs vfs.FS, path, magic string, payload []byte) error {
	if err := engine.WriteChecked(fs, path, magic, payload); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	return nil
}

// readFile returns the payload of the checksummed file at path, and false
// with no error if there is no such file.
func readFile(fs vfs.FS, path, magic string) ([]byte, bool, error) {
	payload, found, err := engine.ReadChecked(fs, path, magic)
	if errors.Is(err, engine.ErrCorrupt) {
		return nil, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("quorum: %w", err)
	}
	return payload, found, nil
}
