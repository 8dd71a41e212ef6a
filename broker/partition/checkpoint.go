package partition

import (
	"encoding/binary"
	"errors"
)

// Checkpoints beside the log, each a small checked file
// (engine.WriteChecked) replaced atomically:
//
//	hw.checkpoint            magic "MKHW": the high watermark, u64
//	leader-epoch.checkpoint  magic "MKLE": replication.EpochCache.Marshal
//
// The high watermark checkpoint lags the real one (it is written every
// hwCheckpointEvery and at close): a restarted replica starts from it and
// learns the rest from its leader, or as leader from its followers. The
// epoch cache is written before the log takes a batch after it changed (a
// new leadership or a truncation alone writes nothing: see
// flushEpochsLocked), so a checkpoint never lacks an epoch that a batch on
// disk carries; a new partition's first one is written by its background
// loop, and a missing or damaged one is rebuilt from the batches' partition
// leader epochs.
const (
	hwCheckpointFile     = "hw.checkpoint"
	epochsCheckpointFile = "leader-epoch.checkpoint"
	hwMagic              = "MKHW"
	epochsMagic          = "MKLE"
)

var errBadCheckpoint = errors.New("damaged checkpoint")

func encodeOffset(off int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(off)) }

func decodeOffset(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, errBadCheckpoint
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
