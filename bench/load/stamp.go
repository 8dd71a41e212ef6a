package load

import (
	"encoding/binary"
	"time"
)

// A stamped value starts with stampMagic and the send time in Unix
// nanoseconds, little-endian; the rest is payload. The magic lets a consumer
// tell the load commands' records from anything else in the topic.
const (
	stampMagic = "MKLG"
	// StampBytes is the smallest value that carries a send time.
	StampBytes = len(stampMagic) + 8
)

// Stamp writes t into v when v is long enough.
func Stamp(v []byte, t time.Time) {
	if len(v) < StampBytes {
		return
	}
	copy(v, stampMagic)
	binary.LittleEndian.PutUint64(v[len(stampMagic):], uint64(t.UnixNano()))
}

// SentAt reads the send time from a stamped value.
func SentAt(v []byte) (time.Time, bool) {
	if len(v) < StampBytes || string(v[:len(stampMagic)]) != stampMagic {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(v[len(stampMagic):]))), true
}
