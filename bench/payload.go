package bench

import (
	"encoding/binary"
	"math/rand/v2"
)

// Payload is a pool of pseudo-random bytes that workloads cut records from.
// Random bytes keep compressing engines honest: a pool far larger than any
// compression window means neighbouring records never repeat each other.
type Payload struct {
	pool []byte
}

// NewPayload fills a pool of size bytes from a seeded generator, so two runs
// write the same bytes.
func NewPayload(seed uint64, size int) *Payload {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	pool := make([]byte, size)
	// Read on a ChaCha8 never fails.
	_, _ = rand.NewChaCha8(key).Read(pool)
	return &Payload{pool: pool}
}

// Record returns the i-th record of n bytes: a read-only view into the pool
// that callers must not modify. Consecutive records start far apart.
func (p *Payload) Record(i int64, n int) []byte {
	if n > len(p.pool) {
		panic("bench: record larger than the payload pool")
	}
	span := int64(len(p.pool) - n + 1)
	// A large odd stride walks the pool without revisiting nearby starts.
	off := (i * 7919 * 64) % span
	if off < 0 {
		off += span
	}
	return p.pool[off : off+int64(n)]
}

// Fill copies pseudo-random bytes into dst, starting at record position i.
func (p *Payload) Fill(i int64, dst []byte) {
	for len(dst) > 0 {
		n := min(len(dst), len(p.pool)/2)
		copy(dst, p.Record(i, n))
		dst = dst[n:]
		i++
	}
}
