package segment

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Recycling. An fdatasync that extends a file, or that writes blocks for
// the first time, journals the file's new size or extents; one that
// overwrites blocks written before journals nothing, and on this project's
// disks runs about 1.7 times as fast. A file of fresh blocks cannot be had
// for free (fallocate's extents are unwritten and journal their conversion
// as an append does; zeroing them first writes every byte twice), so the
// log reuses its own: a segment that DeleteBefore dropped becomes the spare
// (spareFile) once its last reader has left, and the next segment the log
// starts is that file renamed, its frames written over the old ones. In a
// log that retention trims, every segment after the first few is
// recycled.
//
// What a recycled file holds past the log's end is old frames. None of them
// can be read as a frame of the new segment: each frame's base offset must
// be the one the frame before it ends at, and every old frame's base offset
// is below the log start at the time it was dropped, so below the base of
// any segment started later (the log start never moves back, and a
// truncated suffix, whose offsets come again, is never recycled). Bytes
// that are not an old frame's header must match the expected base offset
// and the CRC-32C both.

// spareFile is the name of the log's spare segment file.
const spareFile = "spare.segment"

// spareMinShare: a dropped segment smaller than SegmentBytes/spareMinShare
// is deleted rather than kept as the spare.
const spareMinShare = 2

// keepSpare makes the set-aside file at path the log's spare, if it has
// none and the file is worth keeping, and reports whether it did. The
// rename is not synced: a crash that loses it leaves the set-aside name,
// which Open removes.
func (e *Engine) keepSpare(path string) bool {
	e.spareMu.Lock()
	defer e.spareMu.Unlock()
	if e.spare {
		return false
	}
	fi, err := e.fs.Stat(path)
	if err != nil || fi.Size() < e.segmentBytes.Load()/spareMinShare {
		return false
	}
	if err := e.fs.Rename(path, e.fs.PathJoin(e.dir, spareFile)); err != nil {
		e.log.Warn("keeping a dropped segment for reuse", "file", path, "err", err)
		return false
	}
	e.spare = true
	return true
}

// recycleOrDiscard is what becomes of a segment file DeleteBefore set
// aside once its last reader has left: the spare, or deleted.
func (e *Engine) recycleOrDiscard(path string) {
	if !e.keepSpare(path) {
		e.discard(path)
	}
}

// startSegmentFile makes the file of a new, empty segment at base: the
// spare renamed, when there is one, or a new file. The caller syncs the
// directory before counting on the segment's data.
func (e *Engine) startSegmentFile(base int64) (*segment, error) {
	e.spareMu.Lock()
	have := e.spare
	e.spare = false
	e.spareMu.Unlock()
	if have {
		s, err := recycleSegment(e.fs, e.dir, base)
		if err == nil {
			return s, nil
		}
		e.log.Warn("reusing the spare segment file; creating a new one", "err", err)
	}
	return createSegment(e.fs, e.dir, base)
}

// recycleSegment renames the spare to the segment at base and writes the
// file header over the old one.
func recycleSegment(fs vfs.FS, dir string, base int64) (*segment, error) {
	s := newSegment(fs, dir, base)
	if err := fs.Rename(fs.PathJoin(dir, spareFile), s.logPath); err != nil {
		return nil, fmt.Errorf("segment %d: recycle: %w", base, err)
	}
	f, err := fs.OpenReadWrite(s.logPath, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("segment %d: open recycled file: %w", base, err)
	}
	if err := s.begin(f); err != nil {
		return nil, err
	}
	return s, nil
}
