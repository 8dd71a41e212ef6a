// Package kvlog is how the key-value engines (engines/pebble and
// engines/badger) lay a partition log out in a sorted key-value store, and
// the rules a Read follows over it. It is not an engine and registers none.
//
// # Key space
//
// Format constants never change: a store written by one build is read by
// every later one, whichever of the two engines wrote it.
//
//	batch key   'b' | base offset (uint64, big-endian)          9 bytes
//	batch value crc32c (uint32 BE) | records (uint32 BE) | data
//	start key   'm' 's'
//	offset value offset (uint64 BE) | crc32c (uint32 BE)         12 bytes
//
// Each batch is one key-value pair. Big-endian keys sort in offset order
// (offsets are never negative), and every batch key sorts between BatchSpace
// and BatchLimit. The CRC of a batch covers its base offset, its record
// count and its data, so a value that ends up under the wrong key is caught
// too: the stores checksum their blocks, but this CRC makes "no corrupt
// batch is ever returned" hold the same way for every engine. Metadata keys
// begin with 'm' and hold offset values: StartKey, the log start offset
// (absent means 0), and whatever an engine adds (badger's truncation point,
// 'm' 't').
//
// The byte slices this package exports are shared: never modify them.
package kvlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/minikafka/minikafka/engine"
)

const (
	// BatchPrefix begins every batch key.
	BatchPrefix = 'b'
	// ValueHeader is how many bytes of a batch value precede the data.
	ValueHeader = 8

	batchKeyLen  = 9
	offsetValLen = 12
)

var (
	// BatchSpace is the prefix of every batch key, and sorts before them all.
	BatchSpace = []byte{BatchPrefix}
	// BatchLimit is the exclusive upper bound of the batch key space.
	BatchLimit = []byte{BatchPrefix + 1}
	// StartKey holds the log start offset (an offset value); absent means 0.
	StartKey = []byte{'m', 's'}

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// BatchKey returns the key of the batch whose base offset is base.
func BatchKey(base int64) []byte {
	k := make([]byte, batchKeyLen)
	k[0] = BatchPrefix
	binary.BigEndian.PutUint64(k[1:], uint64(base))
	return k
}

// KeyBase decodes a batch key; ok is false for a key that is not one.
func KeyBase(k []byte) (base int64, ok bool) {
	if len(k) != batchKeyLen || k[0] != BatchPrefix {
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

// AppendValue appends the stored form of b to dst.
func AppendValue(dst []byte, b engine.Batch) []byte {
	var hdr [ValueHeader]byte
	binary.BigEndian.PutUint32(hdr[:], batchCRC(b.BaseOffset, uint32(b.Records), b.Data))
	binary.BigEndian.PutUint32(hdr[4:], uint32(b.Records))
	return append(append(dst, hdr[:]...), b.Data...)
}

// DecodeBatch checks a stored key and value and returns the batch. Its Data
// is a slice of value: a caller that does not own value copies it. Anything
// that fails its checksum or framing is ErrCorrupt.
func DecodeBatch(key, value []byte) (engine.Batch, error) {
	base, ok := KeyBase(key)
	if !ok {
		return engine.Batch{}, fmt.Errorf("key %x is not a batch key: %w", key, engine.ErrCorrupt)
	}
	if len(value) <= ValueHeader {
		return engine.Batch{}, fmt.Errorf("batch %d: value of %d bytes: %w", base, len(value), engine.ErrCorrupt)
	}
	sum := binary.BigEndian.Uint32(value)
	records := binary.BigEndian.Uint32(value[4:])
	data := value[ValueHeader:]
	if records < 1 || records > 1<<31-1 || batchCRC(base, records, data) != sum {
		return engine.Batch{}, fmt.Errorf("batch %d: checksum mismatch: %w", base, engine.ErrCorrupt)
	}
	return engine.Batch{BaseOffset: base, Records: int32(records), Data: data}, nil
}

// EncodeOffset returns the offset value holding off.
func EncodeOffset(off int64) []byte {
	v := make([]byte, offsetValLen)
	binary.BigEndian.PutUint64(v, uint64(off))
	binary.BigEndian.PutUint32(v[8:], crc32.Checksum(v[:8], castagnoli))
	return v
}

// DecodeOffset checks an offset value and returns its offset; a damaged one
// is ErrCorrupt.
func DecodeOffset(v []byte) (int64, error) {
	if len(v) != offsetValLen || crc32.Checksum(v[:8], castagnoli) != binary.BigEndian.Uint32(v[8:]) {
		return 0, fmt.Errorf("offset record (%d bytes): %w", len(v), engine.ErrCorrupt)
	}
	off := int64(binary.BigEndian.Uint64(v))
	if off < 0 {
		return 0, fmt.Errorf("offset record %d: %w", off, engine.ErrCorrupt)
	}
	return off, nil
}
