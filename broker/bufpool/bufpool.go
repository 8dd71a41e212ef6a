// Package bufpool lends the byte buffers that hold a fetch's records from
// the engine read until the response is written, so that serving a fetch
// does not allocate and zero fresh memory each time (make zeroes what it
// returns; a reused buffer is only overwritten by the read).
//
// Ownership is exact: a buffer from Get belongs to its holder until Put,
// and nothing may reference it after Put. A fetch puts its buffers in a
// Lease, which the connection's writer releases once the response has been
// encoded and written (the encoding copies the records), or dropped.
//
// SetPoison makes Put overwrite every released buffer, so that a buffer
// released while something still reads it shows up as wrong bytes (and,
// under the race detector, as a race) instead of silently working.
package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Size classes are the powers of two from classMin to classMax bytes. A
// request above classMax gets plain memory, which Put drops.
const (
	classMinShift = 12 // 4 KiB
	classMaxShift = 24 // 16 MiB
	classes       = classMaxShift - classMinShift + 1
)

var pools [classes]sync.Pool

var poison atomic.Bool

// PoisonByte is what a poisoned Put writes over a released buffer.
const PoisonByte = 0xDB

// SetPoison turns poisoning on or off, for tests: every buffer Put after it
// is filled with PoisonByte before it goes back to the pool.
func SetPoison(on bool) { poison.Store(on) }

// Get returns a buffer of length n and capacity at least n, whose contents
// are whatever its last user left (not zeroed).
func Get(n int) []byte {
	c := classFor(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, ok := pools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(c+classMinShift))
}

// Put returns b to the pool; the caller keeps no reference to it, nor to
// any slice of it. Buffers not from Get are taken too when their capacity
// is at least the smallest class (they serve the class their capacity
// covers).
func Put(b []byte) {
	c := bits.Len(uint(cap(b))) - 1 - classMinShift // the largest class cap(b) covers
	if c < 0 {
		return
	}
	if c >= classes {
		return
	}
	b = b[:cap(b)]
	if poison.Load() {
		for i := range b {
			b[i] = PoisonByte
		}
	}
	pools[c].Put(&b)
}

// classFor is the smallest class holding n bytes, -1 for none.
func classFor(n int) int {
	if n <= 1<<classMinShift {
		return 0
	}
	c := bits.Len(uint(n-1)) - classMinShift
	if c >= classes {
		return -1
	}
	return c
}

// Lease holds the buffers one response references, to be put back
// together once the response no longer needs them. The zero value is
// ready; a nil *Lease holds nothing and Hold on it is a no-op, for callers
// that read into memory the garbage collector owns.
type Lease struct {
	mu   sync.Mutex
	bufs [][]byte
}

// Hold adds b to the lease.
func (l *Lease) Hold(b []byte) {
	if l == nil || cap(b) == 0 {
		return
	}
	l.mu.Lock()
	l.bufs = append(l.bufs, b)
	l.mu.Unlock()
}

// Release puts back every buffer held. Nothing may reference them after.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	bufs := l.bufs
	l.bufs = nil
	l.mu.Unlock()
	for _, b := range bufs {
		Put(b)
	}
}
