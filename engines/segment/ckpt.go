package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// The active segment's checkpoint file bounds recovery after a crash: each
// time a flush round has synced another checkpointBytes of the active
// segment, the flusher appends to it the index entries and extent that the
// round made durable. Recovery then checks only the frames from the last
// checkpoint on, instead of the whole segment. The file is a shortcut and
// is never synced: a record is appended only after the data it describes
// is durable, so a record that survives a crash is true, and one lost or
// torn (its checksum fails) only makes recovery start at the record before.

// Checkpoint sizes.
const (
	// checkpointBytesMax bounds how much of the active segment recovery
	// checks frame by frame after a crash (plus one flush round).
	checkpointBytesMax = 8 << 20
	// checkpointSegmentShare: a segment smaller than 32 × checkpointBytesMax
	// is checkpointed every 1/32 of its size.
	checkpointSegmentShare = 32
)

// checkpointBytesFor is the checkpoint interval for a segment size.
func checkpointBytesFor(segmentBytes int64) int64 {
	return min(max(segmentBytes/checkpointSegmentShare, 1), checkpointBytesMax)
}

// ckptRecordLen is a record's fixed part: count, end, endPos, and the CRC
// after the entries.
const ckptRecordLen = 4 + 8 + 8 + 4

// encodeCheckpointHeader is the file's header: magic, version, segment base.
func encodeCheckpointHeader(base int64) []byte {
	b := make([]byte, ckptHeaderLen)
	copy(b, ckptMagic)
	binary.LittleEndian.PutUint32(b[4:], formatVersion)
	binary.LittleEndian.PutUint64(b[8:], uint64(base))
	return b
}

// appendCheckpointRecord appends the record for (entries, end, endPos),
// chained to the record before it by prev (the previous record's CRC, or
// the header's), and returns the record's CRC.
func appendCheckpointRecord(dst []byte, prev uint32, entries []indexEntry, end, endPos int64) ([]byte, uint32) {
	at := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(entries)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(end))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(endPos))
	for _, e := range entries {
		dst = binary.LittleEndian.AppendUint32(dst, e.rel)
		dst = binary.LittleEndian.AppendUint32(dst, e.pos)
	}
	crc := crc32.Update(prev, castagnoli, dst[at:])
	return binary.LittleEndian.AppendUint32(dst, crc), crc
}

var errNoCheckpoint = errors.New("no usable checkpoint")

// decodeCheckpoint returns the state the file's last good record records,
// with every entry of the records up to it. It stops at the first record
// that is torn, fails its checksum or does not follow the one before (a
// lost write leaves zeros or garbage; nothing after it is trusted).
func decodeCheckpoint(b []byte, base int64) (indexState, error) {
	if len(b) < ckptHeaderLen || string(b[:4]) != ckptMagic ||
		binary.LittleEndian.Uint32(b[4:]) != formatVersion || int64(binary.LittleEndian.Uint64(b[8:])) != base {
		return indexState{}, fmt.Errorf("%w: bad header", errNoCheckpoint)
	}
	prev := crc32.Checksum(b[:ckptHeaderLen], castagnoli)
	st := indexState{base: base, end: base, endPos: fileHeaderLen}
	records := 0
	for p := b[ckptHeaderLen:]; len(p) >= ckptRecordLen; {
		count := int64(binary.LittleEndian.Uint32(p))
		n := ckptRecordLen + count*indexEntryLen
		if count > int64(len(p)) || int64(len(p)) < n {
			break
		}
		crc := binary.LittleEndian.Uint32(p[n-4:])
		if crc32.Update(prev, castagnoli, p[:n-4]) != crc {
			break
		}
		next, ok := checkpointStep(st, p[:n-4])
		if !ok {
			break
		}
		st, prev, p = next, crc, p[n:]
		records++
	}
	if records == 0 {
		return indexState{}, fmt.Errorf("%w: no good record", errNoCheckpoint)
	}
	return st, nil
}

// checkpointStep applies one record (without its CRC) to st, and reports
// whether it follows it: extents that only grow, entries in order within
// the new extent.
func checkpointStep(st indexState, rec []byte) (indexState, bool) {
	count := int(binary.LittleEndian.Uint32(rec))
	end := int64(binary.LittleEndian.Uint64(rec[4:]))
	endPos := int64(binary.LittleEndian.Uint64(rec[12:]))
	if end < st.end || endPos < st.endPos {
		return st, false
	}
	entries := st.entries
	p := rec[20:]
	for range count {
		e := indexEntry{rel: binary.LittleEndian.Uint32(p), pos: binary.LittleEndian.Uint32(p[4:])}
		p = p[indexEntryLen:]
		ok := int64(e.pos) >= fileHeaderLen && int64(e.pos) < endPos && st.base+int64(e.rel) < end
		if n := len(entries); n > 0 {
			ok = ok && e.rel > entries[n-1].rel && e.pos > entries[n-1].pos
		}
		if !ok {
			return st, false
		}
		entries = append(entries, e)
	}
	return indexState{base: st.base, end: end, endPos: endPos, entries: entries}, true
}

// checkpointer is the active segment's checkpoint file as this process
// writes it. Only the flusher, or whoever holds the engine's flushMu,
// touches it.
type checkpointer struct {
	f       vfs.File // nil until this process's first checkpoint of the segment
	pos     int64    // where the next record goes
	crc     uint32   // the last record's CRC (the header's before the first)
	entries int      // entries already recorded
	endPos  int64    // the extent of the last record
}

// checkpoint appends a record for the segment's durable extent (end,
// endPos). The first checkpoint this process makes of a segment replaces
// whatever file was there with a fresh one holding every entry so far.
func (s *segment) checkpoint(end, endPos int64) error {
	c := &s.ckpt
	s.mu.RLock()
	removed := s.removed
	from := min(c.entries, len(s.entries))
	if c.f == nil {
		from = 0
	}
	var entries []indexEntry
	for _, e := range s.entries[from:] {
		if int64(e.pos) >= endPos {
			break
		}
		entries = append(entries, e)
	}
	s.mu.RUnlock()
	if removed {
		return nil
	}
	var buf []byte
	if c.f == nil {
		f, err := s.fs.Create(s.ckptPath, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("segment %d: create checkpoint: %w", s.base, err)
		}
		buf = encodeCheckpointHeader(s.base)
		*c = checkpointer{f: f, crc: crc32.Checksum(buf, castagnoli)}
	}
	buf, crc := appendCheckpointRecord(buf, c.crc, entries, end, endPos)
	if _, err := c.f.WriteAt(buf, c.pos); err != nil {
		return fmt.Errorf("segment %d: write checkpoint: %w", s.base, err)
	}
	c.pos += int64(len(buf))
	c.crc = crc
	c.entries = from + len(entries)
	c.endPos = endPos
	return nil
}

// closeCheckpoint closes the checkpoint file, if this process opened it.
func (s *segment) closeCheckpoint() {
	if s.ckpt.f != nil {
		s.ckpt.f.Close()
	}
	s.ckpt = checkpointer{}
}

// dropCheckpoint closes and removes the checkpoint file of a segment whose
// sealed index now says more: lazily, with no directory sync (a checkpoint
// that survives a crash is still true).
func (s *segment) dropCheckpoint() error {
	s.closeCheckpoint()
	return removeIfExists(s.fs, s.ckptPath)
}

// resumeFromCheckpoint returns where a crash recovery of s may start
// scanning: the extent of the segment's checkpoint, once the frames from
// its last index entry are found to end exactly there; ok is false when
// there is no checkpoint to trust (none, damaged, beyond bound or the
// file's size, or not matching the frames).
func resumeFromCheckpoint(fs vfs.FS, s *segment, f vfs.File, bound, size int64) (indexState, bool) {
	b, ok, err := engine.ReadFileIfExists(fs, s.ckptPath)
	if err != nil || !ok {
		return indexState{}, false
	}
	ck, err := decodeCheckpoint(b, s.base)
	if err != nil || ck.end > bound || ck.endPos > size {
		return indexState{}, false
	}
	// Verify the last stretch: from the last entry's frame (or the first
	// frame) the frames must reach exactly (end, endPos).
	from := indexState{base: s.base, end: s.base, endPos: fileHeaderLen, entries: ck.entries}
	if n := len(ck.entries); n > 0 {
		from.end, from.endPos = s.base+int64(ck.entries[n-1].rel), int64(ck.entries[n-1].pos)
	}
	r := frameReader{readAt: f.ReadAt, base: s.base, limit: size}
	got, err := scanFrames(&r, from, ck.end)
	if err != nil || got.end != ck.end || got.endPos != ck.endPos {
		return indexState{}, false
	}
	return got, true
}
