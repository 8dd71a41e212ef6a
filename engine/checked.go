package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A checked file is the small state kept beside a log (the quorum's hard
// state and snapshot, a partition's high watermark and leader epochs): one
// payload, framed so that damage is detected, replaced atomically.
//
//	+--------+---------+--------+---------+--------+
//	| magic  | version | length | payload | crc32c |
//	| 4      | u32 = 1 | u32    | length  | u32    |
//	+--------+---------+--------+---------+--------+
//
// The CRC-32C (Castagnoli) covers everything before it. Format constants
// never change.
const (
	checkedVersion    = 1
	checkedHeaderLen  = 12
	checkedTrailerLen = 4
)

func encodeChecked(magic string, payload []byte) []byte {
	b := make([]byte, 0, checkedHeaderLen+len(payload)+checkedTrailerLen)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, checkedVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc(b))
}

// DecodeChecked checks a checked file's bytes and returns its payload; the
// error wraps ErrCorrupt when they are damaged or of another magic.
func DecodeChecked(magic string, b []byte) ([]byte, error) {
	if len(magic) != 4 {
		panic("engine: a checked file's magic is 4 bytes")
	}
	if len(b) < checkedHeaderLen+checkedTrailerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
	}
	if string(b[:4]) != magic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:4], magic)
	}
	if v := binary.BigEndian.Uint32(b[4:8]); v != checkedVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, v, checkedVersion)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if uint64(len(b)) != checkedHeaderLen+uint64(n)+checkedTrailerLen {
		return nil, fmt.Errorf("%w: length %d does not match the file's %d bytes", ErrCorrupt, n, len(b))
	}
	body := b[:len(b)-checkedTrailerLen]
	if got, want := crc(body), binary.BigEndian.Uint32(b[len(body):]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return body[checkedHeaderLen:], nil
}

// WriteChecked replaces path atomically (WriteFileAtomic) with payload
// framed under magic (4 bytes).
func WriteChecked(fs vfs.FS, path, magic string, payload []byte) error {
	if len(magic) != 4 {
		panic("engine: a checked file's magic is 4 bytes")
	}
	if err := WriteFileAtomic(fs, path, encodeChecked(magic, payload)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadChecked returns the payload of the checked file at path, and false
// with no error when there is none. Damage is an error wrapping ErrCorrupt.
func ReadChecked(fs vfs.FS, path, magic string) ([]byte, bool, error) {
	b, ok, err := ReadFileIfExists(fs, path)
	if err != nil || !ok {
		return nil, false, err
	}
	payload, err := DecodeChecked(magic, b)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return payload, true, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
