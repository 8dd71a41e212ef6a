package badger

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/minikafka/minikafka/engine"
)

// Key space. Format constants never change: a store written by one build is
// read by every later one.
//
//	batch key   'b' | base offset (uint64, big-endian)          9 bytes
//	batch value crc32c (uint32 BE) | records (uint32 BE) | data
//	start key   'm' 's'
//	start value start offset (uint64 BE) | crc32c (uint32 BE)
//	cut key     'm' 't'   present only while a Truncate is under way
//	cut value   truncation point (uint64 BE) | crc32c (uint32 BE)
//
// The CRC of a batch covers its base offset, its record count and its data,
// so a value that ends up under the wrong key is caught too. Big-endian keys
// sort in offset order (offsets are never negative), and every batch key
// sorts between batchPrefix and batchLimit.
const (
	batchPrefix  = 'b'
	batchKeyLen  = 9
	valueHeader  = 8
	offsetValLen = 12
)

var (
	// batchLimit is the exclusive upper bound of the batch key space.
	batchLimit = []byte{batchPrefix + 1}
	// startKey holds the log start offset; absent means 0.
	startKey = []byte{'m', 's'}
	// cutKey holds the offset a Truncate cuts the log at, while the
	// Truncate's deletions, which may span transactions, are under way.
	cutKey = []byte{'m', 't'}

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// batchKey returns the key of the batch whose base offset is base.
func batchKey(base int64) []byte {
	k := make([]byte, batchKeyLen)
	k[0] = batchPrefix
	binary.BigEndian.PutUint64(k[1:], uint64(base))
	return k
}

// keyBase decodes a batch key; ok is false for a key that is not one.
func keyBase(k []byte) (base int64, ok bool) {
	if len(k) != batchKeyLen || k[0] != batchPrefix {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k[1:])), true
}

func batchCRC(base int64, records uint32, data []byte) uint32 {
	var hdr [12]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(base))
	binary.BigEndian.PutUint32(hdr[8:], records)
	return crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, data)
}

// appendValue appends the stored form of b to dst.
func appendValue(dst []byte, b engine.Batch) []byte {
	var hdr [valueHeader]byte
	binary.BigEndian.PutUint32(hdr[:], batchCRC(b.BaseOffset, uint32(b.Records), b.Data))
	binary.BigEndian.PutUint32(hdr[4:], uint32(b.Records))
	return append(append(dst, hdr[:]...), b.Data...)
}

// decodeBatch checks a stored key and value and returns the batch; its Data
// is a slice of value, which the caller owns (Badger's ValueCopy). Anything
// that fails its checksum or framing is ErrCorrupt.
func decodeBatch(key, value []byte) (engine.Batch, error) {
	base, ok := keyBase(key)
	if !ok {
		return engine.Batch{}, fmt.Errorf("key %x is not a batch key: %w", key, engine.ErrCorrupt)
	}
	if len(value) <= valueHeader {
		return engine.Batch{}, fmt.Errorf("batch %d: value of %d bytes: %w", base, len(value), engine.ErrCorrupt)
	}
	sum := binary.BigEndian.Uint32(value)
	records := binary.BigEndian.Uint32(value[4:])
	data := value[valueHeader:]
	if records < 1 || records > 1<<31-1 || batchCRC(base, records, data) != sum {
		return engine.Batch{}, fmt.Errorf("batch %d: checksum mismatch: %w", base, engine.ErrCorrupt)
	}
	return engine.Batch{BaseOffset: base, Records: int32(records), Data: data}, nil
}

// encodeOffset is the value of startKey and cutKey.
func encodeOffset(off int64) []byte {
	v := make([]byte, offsetValLen)
	binary.BigEndian.PutUint64(v, uint64(off))
	binary.BigEndian.PutUint32(v[8:], crc32.Checksum(v[:8], castagnoli))
	return v
}

func decodeOffset(v []byte) (int64, error) {
	if len(v) != offsetValLen || crc32.Checksum(v[:8], castagnoli) != binary.BigEndian.Uint32(v[8:]) {
		return 0, fmt.Errorf("offset record (%d bytes): %w", len(v), engine.ErrCorrupt)
	}
	off := int64(binary.BigEndian.Uint64(v))
	if off < 0 {
		return 0, fmt.Errorf("offset record %d: %w", off, engine.ErrCorrupt)
	}
	return off, nil
}
