package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Format constants. They are written to disk: never change them; add a new
// version instead.
const (
	segmentMagic   = "MKSG"
	indexMagic     = "MKIX"
	startMagic     = "MKST"
	cleanMagic     = "MKCL"
	ckptMagic      = "MKCP"
	formatVersion  = 1
	fileHeaderLen  = 8  // magic + version, at the head of every segment file
	frameHeaderLen = 20 // crc, length, base offset, records
	indexEntryLen  = 8  // relative offset, file position
	indexHeaderLen = 40 // magic, version, flags, count, base, end, endPos
	startFileLen   = 20 // magic, version, offset, crc
	cleanFileLen   = 28 // magic, version, active base, end, crc
	ckptHeaderLen  = 16 // magic, version, base

	// indexIntervalBytes is how much log lies between two index entries at
	// most (plus one frame): a read scans at most this much before the frame
	// it wants.
	indexIntervalBytes = 4 << 10

	// segmentBytesMax bounds Options.SegmentBytes so that every frame start
	// fits the index's 4-byte position.
	segmentBytesMax = 1 << 30
	// segmentBytesMin keeps a tiny SegmentBytes from making a file per batch
	// worth of headers meaningless; it is still small enough for tests.
	segmentBytesMin = 1 << 10
)

// File names in the engine's directory.
const (
	logSuffix   = ".log"
	indexSuffix = ".index"
	ckptSuffix  = ".ckpt"
	tmpSuffix   = ".tmp"
	// deletedSuffix marks a log file that DeleteBefore dropped and renamed
	// aside, to be deleted once the engine's locks are released.
	deletedSuffix = ".deleted"
	startFile     = "log-start"
	cleanFile     = "clean-shutdown"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadFrame marks bytes that do not form a valid frame where one must be.
// During recovery of the active tail it means "torn here"; anywhere else it
// is reported as engine.ErrCorrupt.
var errBadFrame = errors.New("bad frame")

// frameHeader is the decoded fixed part of a frame.
type frameHeader struct {
	crc     uint32
	length  uint32
	base    int64
	records int32
}

func (h frameHeader) next() int64     { return h.base + int64(h.records) }
func (h frameHeader) frameLen() int64 { return frameHeaderLen + int64(h.length) }

// putFrame encodes the frame for (base, records, data) into dst, which must
// hold frameHeaderLen+len(data) bytes.
func putFrame(dst []byte, base int64, records int32, data []byte) {
	binary.LittleEndian.PutUint32(dst[4:], uint32(len(data)))
	binary.LittleEndian.PutUint64(dst[8:], uint64(base))
	binary.LittleEndian.PutUint32(dst[16:], uint32(records))
	copy(dst[frameHeaderLen:], data)
	binary.LittleEndian.PutUint32(dst[0:], crc32.Update(0, castagnoli, dst[4:frameHeaderLen+len(data)]))
}

// decodeFrameHeader parses b[:frameHeaderLen] and checks what can be checked
// without the data: lengths and counts in range and the expected base offset.
func decodeFrameHeader(b []byte, wantBase int64) (frameHeader, error) {
	h := frameHeader{
		crc:     binary.LittleEndian.Uint32(b[0:]),
		length:  binary.LittleEndian.Uint32(b[4:]),
		base:    int64(binary.LittleEndian.Uint64(b[8:])),
		records: int32(binary.LittleEndian.Uint32(b[16:])),
	}
	switch {
	case h.length == 0:
		return h, fmt.Errorf("%w: empty data", errBadFrame)
	case h.records < 1:
		return h, fmt.Errorf("%w: %d records", errBadFrame, h.records)
	case h.base != wantBase:
		return h, fmt.Errorf("%w: base offset %d, want %d", errBadFrame, h.base, wantBase)
	}
	return h, nil
}

// checkFrame verifies the CRC of a whole frame (header and data) in b.
func checkFrame(b []byte, h frameHeader) error {
	if got := crc32.Update(0, castagnoli, b[4:]); got != h.crc {
		return fmt.Errorf("%w: checksum %#08x, stored %#08x", errBadFrame, got, h.crc)
	}
	return nil
}

func putFileHeader(dst []byte) {
	copy(dst, segmentMagic)
	binary.LittleEndian.PutUint32(dst[4:], formatVersion)
}

func checkFileHeader(b []byte) error {
	if string(b[:4]) != segmentMagic {
		return fmt.Errorf("%w: segment magic %q", errBadFrame, b[:4])
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != formatVersion {
		return fmt.Errorf("%w: segment format version %d, this build reads %d", errBadFrame, v, formatVersion)
	}
	return nil
}

// Small checksummed files: the log start offset and the clean-shutdown
// marker. Both are written with engine.WriteFileAtomic.

func encodeStart(offset int64) []byte {
	b := make([]byte, startFileLen)
	copy(b, startMagic)
	binary.LittleEndian.PutUint32(b[4:], formatVersion)
	binary.LittleEndian.PutUint64(b[8:], uint64(offset))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	return b
}

func decodeStart(b []byte) (int64, error) {
	if len(b) != startFileLen || string(b[:4]) != startMagic ||
		binary.LittleEndian.Uint32(b[16:]) != crc32.Checksum(b[:16], castagnoli) {
		return 0, errors.New("bad log start file")
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != formatVersion {
		return 0, fmt.Errorf("log start file version %d, this build reads %d", v, formatVersion)
	}
	off := int64(binary.LittleEndian.Uint64(b[8:]))
	if off < 0 {
		return 0, fmt.Errorf("negative log start %d", off)
	}
	return off, nil
}

// cleanState is what the clean-shutdown marker records: the active segment
// and the log end at Close, cross-checked against the active index.
type cleanState struct {
	activeBase int64
	end        int64
}

func encodeClean(c cleanState) []byte {
	b := make([]byte, cleanFileLen)
	copy(b, cleanMagic)
	binary.LittleEndian.PutUint32(b[4:], formatVersion)
	binary.LittleEndian.PutUint64(b[8:], uint64(c.activeBase))
	binary.LittleEndian.PutUint64(b[16:], uint64(c.end))
	binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(b[:24], castagnoli))
	return b
}

func decodeClean(b []byte) (cleanState, bool) {
	if len(b) != cleanFileLen || string(b[:4]) != cleanMagic ||
		binary.LittleEndian.Uint32(b[4:]) != formatVersion ||
		binary.LittleEndian.Uint32(b[24:]) != crc32.Checksum(b[:24], castagnoli) {
		return cleanState{}, false
	}
	return cleanState{
		activeBase: int64(binary.LittleEndian.Uint64(b[8:])),
		end:        int64(binary.LittleEndian.Uint64(b[16:])),
	}, true
}

// Segment and index files are named by the segment's base offset, zero
// padded so that names sort in offset order.

func logName(base int64) string   { return fmt.Sprintf("%020d%s", base, logSuffix) }
func indexName(base int64) string { return fmt.Sprintf("%020d%s", base, indexSuffix) }
func ckptName(base int64) string  { return fmt.Sprintf("%020d%s", base, ckptSuffix) }

// parseName returns the base offset of a segment or index file name.
func parseName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}
