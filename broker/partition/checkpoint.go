package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// Checkpoints beside the log, each a small file replaced atomically:
//
//	hw.checkpoint            "MKHW" | u32 crc32c(offset) | u64 high watermark
//	leader-epoch.checkpoint  "MKLE" | u32 crc32c(body)   | body (replication.EpochCache.Marshal)
//
// The high watermark checkpoint lags the real one (it is written every
// hwCheckpointEvery and at close): a restarted replica starts from it and
// learns the rest from its leader, or as leader from its followers. The
// epoch cache is written whenever it changes; a missing or damaged one is
// rebuilt from the batches' partition leader epochs.
const (
	hwCheckpointFile     = "hw.checkpoint"
	epochsCheckpointFile = "leader-epoch.checkpoint"
	hwMagic              = "MKHW"
	epochsMagic          = "MKLE"
)

var errBadCheckpoint = errors.New("damaged checkpoint")

func encodeCheckpoint(magic string, body []byte) []byte {
	out := append([]byte(magic), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(out[4:], crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

func writeCheckpoint(fs vfs.FS, path, magic string, body []byte) error {
	if err := engine.WriteFileAtomic(fs, path, encodeCheckpoint(magic, body)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readCheckpoint returns the body of the checkpoint at path; found is false
// when there is none, and the error wraps errBadCheckpoint when it is damaged.
func readCheckpoint(fs vfs.FS, path, magic string) (body []byte, found bool, err error) {
	f, err := fs.Open(path)
	if oserror.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) < 8 || string(b[:4]) != magic || binary.BigEndian.Uint32(b[4:8]) != crc32.Checksum(b[8:], castagnoli) {
		return nil, true, fmt.Errorf("%s: %w", path, errBadCheckpoint)
	}
	return b[8:], true, nil
}

func encodeOffset(off int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(off)) }

func decodeOffset(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, errBadCheckpoint
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
