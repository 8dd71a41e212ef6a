package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
)

// EpochEntry says that leader epoch Epoch wrote its first batch of the log at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

func (e EpochEntry) String() string { return fmt.Sprintf("%d:%d", e.Epoch, e.StartOffset) }

// EpochCache is a replica's leader-epoch cache (KIP-101, KIP-279): for each
// leader epoch that has batches in the log (and, on a leader, its own epoch
// from the moment it was elected), the offset where that epoch begins. Both
// fields strictly increase along the entries.
//
// It is how a follower and its leader find where their logs part: a
// follower's last epoch and log end are checked against the leader's cache
// (EndOffsetFor), never against a high watermark, which lags. The cache is
// in memory; the shell persists it (Marshal) beside the log whenever a
// SaveEpochs action says it changed, and rebuilds it from the batch headers
// (RebuildEpochCache) when that checkpoint is missing.
type EpochCache struct {
	entries []EpochEntry
}

// NewEpochCache returns a cache holding the given entries, which must
// strictly increase in both fields.
func NewEpochCache(entries ...EpochEntry) (*EpochCache, error) {
	if err := checkEntries(entries); err != nil {
		return nil, err
	}
	return &EpochCache{entries: slices.Clone(entries)}, nil
}

func checkEntries(entries []EpochEntry) error {
	for i, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("replication: epoch entry %v is negative", e)
		}
		if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			return fmt.Errorf("replication: epoch entries %v then %v do not increase", entries[i-1], e)
		}
	}
	return nil
}

// Assign records that a batch of leader epoch epoch was appended at
// startOffset, and reports whether the cache changed (then the shell saves
// it). A batch of the latest epoch changes nothing. As in Kafka, entries that
// the new one would make non-monotonic (an epoch or start offset at or past
// the new one) are dropped first: they describe a suffix that a truncation
// has removed. Negative values (batches from before leader epochs) are
// ignored.
func (c *EpochCache) Assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.Latest(); ok && last.Epoch == epoch && startOffset >= last.StartOffset {
		return false
	}
	for n := len(c.entries); n > 0; n = len(c.entries) {
		if e := c.entries[n-1]; e.Epoch < epoch && e.StartOffset < startOffset {
			break
		}
		c.entries = c.entries[:n-1]
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// TruncateFromEnd follows a truncation of the log to endOffset: entries that
// start at or after it go. It reports whether the cache changed.
func (c *EpochCache) TruncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n < len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// TruncateFromStart follows the log start moving to startOffset (retention,
// DeleteBefore): the entry covering startOffset now starts there, and the
// entries before it go. It reports whether the cache changed.
func (c *EpochCache) TruncateFromStart(startOffset int64) bool {
	i := len(c.entries) - 1
	for i >= 0 && c.entries[i].StartOffset > startOffset {
		i--
	}
	if i < 0 || (i == 0 && c.entries[0].StartOffset == startOffset) {
		return false
	}
	c.entries[i].StartOffset = startOffset
	c.entries = slices.Delete(c.entries, 0, i)
	return true
}

// EndOffsetFor answers OffsetForLeaderEpoch for epoch on a log whose end is
// logEnd: the largest cached epoch at or below epoch, and where it ends, that
// is where the next larger cached epoch starts, or logEnd when it is the
// latest (also when epoch is above every cached one: everything this replica
// has is at or below it).
//
// When epoch is below every cached epoch the answer is (epoch, start of the
// first cached epoch), as in Kafka since 2.1: the log that held epoch was
// removed by retention, and the asker should replicate from where this log's
// history begins. (-1, -1) is the answer only when epoch is negative (the
// asker has no epoch) or the cache is empty.
func (c *EpochCache) EndOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if last := c.entries[n-1]; epoch >= last.Epoch {
		return last.Epoch, logEnd
	}
	// The first entry of a larger epoch; it exists since epoch < the latest.
	i, _ := slices.BinarySearchFunc(c.entries, epoch+1, func(e EpochEntry, t int32) int {
		return int(e.Epoch) - int(t)
	})
	if i == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

// Latest is the last entry, and false when the cache is empty.
func (c *EpochCache) Latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: -1, StartOffset: -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// LatestEpoch is the latest epoch, -1 when the cache is empty: what a
// follower sends as LastFetchedEpoch.
func (c *EpochCache) LatestEpoch() int32 {
	e, _ := c.Latest()
	return e.Epoch
}

// Entries is a copy of the entries, oldest first; nil when empty.
func (c *EpochCache) Entries() []EpochEntry {
	if len(c.entries) == 0 {
		return nil
	}
	return slices.Clone(c.entries)
}

// Clear empties the cache (the log was reset).
func (c *EpochCache) Clear() bool {
	changed := len(c.entries) > 0
	c.entries = c.entries[:0]
	return changed
}

// Clone is an independent copy.
func (c *EpochCache) Clone() *EpochCache { return &EpochCache{entries: slices.Clone(c.entries)} }

// epochsVersion is the first byte of Marshal's output. Formats never change;
// a new one gets a new version.
const epochsVersion = 1

// Marshal encodes the cache, deterministically:
//
//	version  1 byte  (1)
//	count    4 bytes big endian
//	count x  epoch 4 bytes, start offset 8 bytes, big endian
//
// Checksums and atomic replacement are the shell's, as for every file beside
// the log.
func (c *EpochCache) Marshal() []byte {
	b := make([]byte, 5, 5+12*len(c.entries))
	b[0] = epochsVersion
	binary.BigEndian.PutUint32(b[1:], uint32(len(c.entries)))
	for _, e := range c.entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b
}

// ErrBadEpochs is returned (wrapped) by UnmarshalEpochCache for bytes that
// are not a cache Marshal wrote: rebuild the cache from the log instead.
var ErrBadEpochs = errors.New("replication: bad epoch cache encoding")

// UnmarshalEpochCache decodes what Marshal wrote.
func UnmarshalEpochCache(b []byte) (*EpochCache, error) {
	if len(b) < 5 || b[0] != epochsVersion {
		return nil, fmt.Errorf("%w: %d bytes, version %v", ErrBadEpochs, len(b), b[:min(1, len(b))])
	}
	n := binary.BigEndian.Uint32(b[1:])
	if uint64(len(b)-5) != 12*uint64(n) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrBadEpochs, n, len(b))
	}
	entries := make([]EpochEntry, n)
	for i := range entries {
		p := b[5+12*i:]
		entries[i] = EpochEntry{Epoch: int32(binary.BigEndian.Uint32(p)), StartOffset: int64(binary.BigEndian.Uint64(p[4:]))}
	}
	if err := checkEntries(entries); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEpochs, err)
	}
	return &EpochCache{entries: entries}, nil
}

// RebuildEpochCache builds the cache from the log's batches in offset order
// (their PartitionLeaderEpoch and base offset), for when the checkpoint is
// missing or bad. A leader's entry for an epoch in which it has not yet
// written cannot be rebuilt, and need not be: after a restart it is leader
// of a new epoch or none.
func RebuildEpochCache(batches iter.Seq[BatchInfo]) *EpochCache {
	c := &EpochCache{}
	for b := range batches {
		c.Assign(b.Epoch, b.BaseOffset)
	}
	return c
}
