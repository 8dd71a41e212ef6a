package producer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sync"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// ID file format, big endian:
//
//	magic "MKPI" | version u16 = 1 | crc32c u32 (of what follows) | next i64
//
// next is the first id not yet reserved: every id below it may have been
// handed out, so after a restart allocation resumes there.
const (
	idsMagic   = "MKPI"
	idsVersion = 1
	idsSize    = 4 + 2 + 4 + 8
)

// DefaultIDBlock is how many ids the allocator reserves per file write.
const DefaultIDBlock = 1000

// IDAllocator hands out producer ids that never repeat, across restarts too:
// it reserves a block of ids with one durable write and hands them out from
// memory; a restart skips what was left of the block.
type IDAllocator struct {
	fs    vfs.FS
	path  string
	block int64

	mu       sync.Mutex
	next     int64 // next id to hand out
	reserved int64 // ids below this are reserved on disk
}

// OpenIDAllocator opens (or starts) the allocator whose state lives at path.
// block <= 0 means DefaultIDBlock.
func OpenIDAllocator(fs vfs.FS, path string, block int64) (*IDAllocator, error) {
	if block <= 0 {
		block = DefaultIDBlock
	}
	a := &IDAllocator{fs: fs, path: path, block: block}
	b, err := readFile(fs, path)
	switch {
	case oserror.IsNotExist(err):
		return a, nil
	case err != nil:
		return nil, fmt.Errorf("producer ids: %w", err)
	}
	be := binary.BigEndian
	if len(b) != idsSize || string(b[:4]) != idsMagic || be.Uint16(b[4:]) != idsVersion ||
		be.Uint32(b[6:]) != crc32.Checksum(b[10:], castagnoli) {
		// Guessing would risk handing out an id twice; an operator must look.
		return nil, fmt.Errorf("producer ids: %s is damaged (%d bytes): %w", path, len(b), engine.ErrCorrupt)
	}
	next := int64(be.Uint64(b[10:]))
	if next < 0 {
		return nil, fmt.Errorf("producer ids: %s holds negative next id %d: %w", path, next, engine.ErrCorrupt)
	}
	a.next, a.reserved = next, next
	return a, nil
}

// Next returns a producer id never returned before.
func (a *IDAllocator) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.reserved {
		if a.reserved > math.MaxInt64-a.block {
			return 0, fmt.Errorf("producer ids: exhausted at %d", a.reserved)
		}
		end := a.reserved + a.block
		be := binary.BigEndian
		b := make([]byte, 0, idsSize)
		b = append(b, idsMagic...)
		b = be.AppendUint16(b, idsVersion)
		b = be.AppendUint32(b, 0)
		b = be.AppendUint64(b, uint64(end))
		be.PutUint32(b[6:], crc32.Checksum(b[10:], castagnoli))
		if err := engine.WriteFileAtomic(a.fs, a.path, b); err != nil {
			return 0, fmt.Errorf("producer ids: reserve block up to %d: %w", end, err)
		}
		a.reserved = end
	}
	id := a.next
	a.next++
	return id, nil
}
