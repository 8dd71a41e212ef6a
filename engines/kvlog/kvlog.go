// Package kvlog is how the key-value engines (engines/pebble and
// engines/badger) lay partition logs out in a sorted key-value store, and
// the rules a Read follows over it. It is not an engine and registers none.
//
// # Key space
//
// Format constants never change: a store written by one build is read by
// every later one, whichever of the two engines wrote it.
//
// A log's keys all begin with its Space's prefix: none for a log alone in
// its database (Driver.Open's, and every partition's before stores), and
// 'l' and the log's id (uint64, big-endian) for a log of a store
// (LogSpace), so that each log of a store is one contiguous key range,
// deleted with one range deletion or prefix drop.
//
//	batch key    prefix | 'b' | base offset (uint64, big-endian)
//	batch value  crc32c (uint32 BE) | records (uint32 BE) | data
//	start key    prefix | 'm' 's'
//	offset value offset (uint64 BE) | crc32c (uint32 BE)         12 bytes
//
// Each batch is one key-value pair. Big-endian keys sort in offset order
// (offsets are never negative), and every batch key of a space sorts
// between its BatchSpace and its BatchLimit. The CRC of a batch covers its
// base offset, its record count and its data, so a value that ends up
// under the wrong key is caught too: the stores checksum their blocks, but
// this CRC makes "no corrupt batch is ever returned" hold the same way for
// every engine. Metadata keys begin with the prefix and 'm' and hold
// offset values: the start key, the log start offset (absent means 0), and
// whatever an engine adds (badger's truncation point, 'm' 't').
//
// A store's own keys sort apart from its logs':
//
//	format key   's'                   the value "kvlog store v1": this database is a store
//	next key     'n'                   an offset value: ids below it may have been handed out
//	log key      'r' | id (8 bytes BE) the log exists (value: the one byte 'L')
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
	// BatchPrefix begins every batch key after its space's prefix.
	BatchPrefix = 'b'
	// ValueHeader is how many bytes of a batch value precede the data.
	ValueHeader = 8

	offsetValLen = 12
	logPrefix    = 'l'
	logIDLen     = 8
)

var (
	// FormatKey holds StoreFormat in a database that is a store.
	FormatKey = []byte{'s'}
	// StoreFormat is FormatKey's value.
	StoreFormat = []byte("kvlog store v1")
	// NextKey holds the store's next log id (an offset value).
	NextKey = []byte{'n'}
	// LogKeys is the prefix of every log key of a store.
	LogKeys = []byte{'r'}
	// LogKeysLimit is the exclusive upper bound of the log keys.
	LogKeysLimit = []byte{'r' + 1}
	// LiveLog is a log key's value.
	LiveLog = []byte{'L'}

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// LogKey is the key that says log id exists in a store.
func LogKey(id engine.LogID) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, 1+logIDLen), LogKeys...), uint64(id))
}

// LogKeyID decodes a log key; ok is false for a key that is not one.
func LogKeyID(k []byte) (engine.LogID, bool) {
	if len(k) != 1+logIDLen || k[0] != LogKeys[0] {
		return 0, false
	}
	return engine.LogID(binary.BigEndian.Uint64(k[1:])), true
}

// Space is the key space of one log: every key of the log begins with its
// prefix. The zero Space is a log alone in its database.
type Space struct{ prefix []byte }

// LogSpace is the space of log id of a store.
func LogSpace(id engine.LogID) Space {
	p := make([]byte, 1, 1+logIDLen)
	p[0] = logPrefix
	return Space{binary.BigEndian.AppendUint64(p, uint64(id))}
}

func (s Space) key(rest ...byte) []byte {
	return append(append(make([]byte, 0, len(s.prefix)+len(rest)), s.prefix...), rest...)
}

// Lower and Upper bound every key of the space, Upper excluded; for the
// zero Space, every key of the database (Upper nil: no bound).
func (s Space) Lower() []byte { return s.key() }

// Upper: see Lower.
func (s Space) Upper() []byte {
	if len(s.prefix) == 0 {
		return nil
	}
	u := s.key()
	for i := len(u) - 1; i >= 0; i-- { // the prefix plus one, as a number
		if u[i]++; u[i] != 0 {
			return u[:i+1]
		}
	}
	return nil
}

// Prefix is the space's prefix (nil for the zero Space).
func (s Space) Prefix() []byte { return s.key() }

// BatchSpace is the prefix of every batch key of the space, and sorts
// before them all.
func (s Space) BatchSpace() []byte { return s.key(BatchPrefix) }

// BatchLimit is the exclusive upper bound of the space's batch keys.
func (s Space) BatchLimit() []byte { return s.key(BatchPrefix + 1) }

// StartKey holds the log start offset (an offset value); absent means 0.
func (s Space) StartKey() []byte { return s.key('m', 's') }

// MetaKey is the space's metadata key named name (the start key is 's').
func (s Space) MetaKey(name byte) []byte { return s.key('m', name) }

// BatchKey returns the key of the batch whose base offset is base.
func (s Space) BatchKey(base int64) []byte {
	return binary.BigEndian.AppendUint64(s.key(BatchPrefix), uint64(base))
}

// KeyBase decodes a batch key of the space; ok is false for a key that is
// not one.
func (s Space) KeyBase(k []byte) (base int64, ok bool) {
	n := len(s.prefix)
	if len(k) != n+9 || string(k[:n]) != string(s.prefix) || k[n] != BatchPrefix {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k[n+1:])), true
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

// DecodeBatch checks a stored key of the space and its value and returns
// the batch. Its Data is a slice of value: a caller that does not own
// value copies it. Anything that fails its checksum or framing is
// ErrCorrupt.
func (s Space) DecodeBatch(key, value []byte) (engine.Batch, error) {
	base, ok := s.KeyBase(key)
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
