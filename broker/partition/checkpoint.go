package partition

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
)

// Checkpoints, each a small checked file (engine.WriteChecked) replaced
// atomically:
//
//	Dir/high-watermark.checkpoint  magic "MKHS": every partition's high
//	                               watermark (encodeHWs)
//	leader-epoch.checkpoint        magic "MKLE", beside each partition's log:
//	                               replication.EpochCache.Marshal
//
// The high watermark checkpoint lags the real ones: the Manager writes it
// every hwCheckpointEvery when some partition's moved, and at close, one
// file for all of them as Kafka's replication-offset-checkpoint is (a file
// per partition cost a broker with thousands of partitions thousands of
// syncs every interval, just when they moved most). A restarted replica
// starts from it and learns the rest from its leader, or as leader from
// its followers. The epoch cache is written before the log takes a batch
// after it changed (a new leadership or a truncation alone writes nothing:
// see flushEpochsLocked), so a checkpoint never lacks an epoch that a batch
// on disk carries; a new partition's first one is written by its background
// loop, and a missing or damaged one is rebuilt from the batches' partition
// leader epochs.
const (
	hwCheckpointFile     = "high-watermark.checkpoint"
	epochsCheckpointFile = "leader-epoch.checkpoint"
	hwMagic              = "MKHS"
	epochsMagic          = "MKLE"
)

var errBadCheckpoint = errors.New("damaged checkpoint")

// hwEntryBytes is one partition's entry: topic id, index, high watermark.
const hwEntryBytes = 16 + 4 + 8

// encodeHWs lays out the high watermarks in key order.
func encodeHWs(hws map[Key]int64) []byte {
	keys := slices.SortedFunc(maps.Keys(hws), CompareKeys)
	b := make([]byte, 0, 4+len(keys)*hwEntryBytes)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = append(b, k.TopicID[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(k.Index))
		b = binary.BigEndian.AppendUint64(b, uint64(hws[k]))
	}
	return b
}

func decodeHWs(b []byte) (map[Key]int64, error) {
	if len(b) < 4 || len(b)-4 != int(binary.BigEndian.Uint32(b))*hwEntryBytes {
		return nil, errBadCheckpoint
	}
	hws := make(map[Key]int64, (len(b)-4)/hwEntryBytes)
	for e := b[4:]; len(e) > 0; e = e[hwEntryBytes:] {
		var k Key
		copy(k.TopicID[:], e[:16])
		k.Index = int32(binary.BigEndian.Uint32(e[16:]))
		hws[k] = int64(binary.BigEndian.Uint64(e[20:]))
	}
	return hws, nil
}
