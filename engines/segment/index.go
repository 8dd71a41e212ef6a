package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// indexEntry says a frame starts at file position pos with base offset
// segment base + rel.
type indexEntry struct {
	rel uint32
	pos uint32
}

// indexState is a segment's sparse index plus the extent it covers. It is
// what an index file holds.
type indexState struct {
	// sealed marks the index of a segment that takes no more frames: its end
	// is authoritative, bytes past endPos are dead. An index written for the
	// active segment at a clean Close is a snapshot (not sealed): it is
	// trusted only together with the clean-shutdown marker.
	sealed  bool
	base    int64 // segment base offset
	end     int64 // offset just past the last frame
	endPos  int64 // byte position just past the last frame
	entries []indexEntry
}

// lookup returns the frame to start scanning from for offset: the indexed
// frame with the greatest base offset not above it, or the segment's first
// frame when there is none.
func lookup(base int64, entries []indexEntry, offset int64) (frameBase, pos int64) {
	rel := offset - base
	i := sort.Search(len(entries), func(i int) bool { return int64(entries[i].rel) > rel })
	if i == 0 {
		return base, fileHeaderLen
	}
	e := entries[i-1]
	return base + int64(e.rel), int64(e.pos)
}

// indexBuilder decides which frames get an index entry: the first one, then
// the first frame starting at least indexIntervalBytes after the last entry.
type indexBuilder struct {
	lastPos int64 // position of the last entry; -1 before the first
}

func newIndexBuilder() indexBuilder { return indexBuilder{lastPos: -1} }

// add reports the entry for a frame at (base+rel, pos), if it gets one.
func (b *indexBuilder) add(segBase, frameBase, pos int64) (indexEntry, bool) {
	if b.lastPos >= 0 && pos-b.lastPos < indexIntervalBytes {
		return indexEntry{}, false
	}
	b.lastPos = pos
	return indexEntry{rel: uint32(frameBase - segBase), pos: uint32(pos)}, true
}

// builderFor resumes an indexBuilder after the given entries.
func builderFor(entries []indexEntry) indexBuilder {
	b := newIndexBuilder()
	if n := len(entries); n > 0 {
		b.lastPos = int64(entries[n-1].pos)
	}
	return b
}

const indexFlagSealed = 1

// encodeIndex lays out an index file (see the package doc).
func encodeIndex(s indexState) []byte {
	b := make([]byte, indexHeaderLen+indexEntryLen*len(s.entries)+4)
	copy(b, indexMagic)
	binary.LittleEndian.PutUint32(b[4:], formatVersion)
	if s.sealed {
		binary.LittleEndian.PutUint32(b[8:], indexFlagSealed)
	}
	binary.LittleEndian.PutUint32(b[12:], uint32(len(s.entries)))
	binary.LittleEndian.PutUint64(b[16:], uint64(s.base))
	binary.LittleEndian.PutUint64(b[24:], uint64(s.end))
	binary.LittleEndian.PutUint64(b[32:], uint64(s.endPos))
	p := b[indexHeaderLen:]
	for _, e := range s.entries {
		binary.LittleEndian.PutUint32(p, e.rel)
		binary.LittleEndian.PutUint32(p[4:], e.pos)
		p = p[indexEntryLen:]
	}
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

var errBadIndex = errors.New("bad index file")

// decodeIndex parses an index file and checks that it is internally
// consistent and belongs to the segment at base. Whether it matches the
// segment's extent is the caller's check.
func decodeIndex(b []byte, base int64) (indexState, error) {
	if len(b) < indexHeaderLen+4 || string(b[:4]) != indexMagic {
		return indexState{}, fmt.Errorf("%w: no header", errBadIndex)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != formatVersion {
		return indexState{}, fmt.Errorf("%w: version %d, this build reads %d", errBadIndex, v, formatVersion)
	}
	n := len(b) - 4
	if got, want := crc32.Checksum(b[:n], castagnoli), binary.LittleEndian.Uint32(b[n:]); got != want {
		return indexState{}, fmt.Errorf("%w: checksum %#08x, stored %#08x", errBadIndex, got, want)
	}
	flags := binary.LittleEndian.Uint32(b[8:])
	count := int(binary.LittleEndian.Uint32(b[12:]))
	s := indexState{
		sealed: flags&indexFlagSealed != 0,
		base:   int64(binary.LittleEndian.Uint64(b[16:])),
		end:    int64(binary.LittleEndian.Uint64(b[24:])),
		endPos: int64(binary.LittleEndian.Uint64(b[32:])),
	}
	if flags&^indexFlagSealed != 0 {
		return indexState{}, fmt.Errorf("%w: unknown flags %#x", errBadIndex, flags)
	}
	if s.base != base || s.end < base || s.endPos < fileHeaderLen || n != indexHeaderLen+count*indexEntryLen {
		return indexState{}, fmt.Errorf("%w: header (base %d end %d endPos %d count %d) does not fit segment %d",
			errBadIndex, s.base, s.end, s.endPos, count, base)
	}
	s.entries = make([]indexEntry, count)
	p := b[indexHeaderLen:]
	for i := range s.entries {
		e := indexEntry{rel: binary.LittleEndian.Uint32(p), pos: binary.LittleEndian.Uint32(p[4:])}
		p = p[indexEntryLen:]
		ok := int64(e.pos) >= fileHeaderLen && int64(e.pos) < s.endPos && base+int64(e.rel) < s.end
		if i > 0 {
			prev := s.entries[i-1]
			ok = ok && e.rel > prev.rel && e.pos > prev.pos
		}
		if !ok {
			return indexState{}, fmt.Errorf("%w: entry %d (%d, %d) out of order or range", errBadIndex, i, e.rel, e.pos)
		}
		s.entries[i] = e
	}
	return s, nil
}
