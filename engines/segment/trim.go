package segment

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// Truncate implements engine.LogEngine.
//
// No file is ever shortened (vfs.FS has no truncate): the segment holding
// the cut is sealed there by a sealed index, which is authoritative, and a
// new segment starts at the cut. The steps are ordered so that a crash at any
// point leaves a prefix of the old log at least as long as the cut, and the
// cut itself once the sealed index is durable.
func (e *Engine) Truncate(offset int64) error {
	defer e.lockAll()()
	if err := e.writable(); err != nil {
		return err
	}
	start, end := e.start.Load(), e.end.Load()
	if offset < start || offset > end {
		return fmt.Errorf("%w: truncate to %d, log is [%d, %d]", engine.ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return nil
	}
	i := e.segmentIndex(offset)
	s := e.segs[i]
	cutBase, cutPos, err := s.seek(offset)
	if err != nil {
		return fmt.Errorf("truncate to %d: %w", offset, err)
	}
	if cutBase <= start {
		err = e.resetLocked(start)
	} else {
		err = e.cutLocked(i, cutBase, cutPos)
	}
	if err != nil {
		return e.fail(fmt.Errorf("truncate to %d: %w", offset, err))
	}
	return nil
}

// segmentIndex returns the index in segs of the segment holding offset; the
// caller holds mu and has checked start <= offset < end.
func (e *Engine) segmentIndex(offset int64) int {
	i, found := slices.BinarySearchFunc(e.segs, offset, func(s *segment, o int64) int {
		switch {
		case s.base < o:
			return -1
		case s.base > o:
			return 1
		}
		return 0
	})
	if !found {
		i--
	}
	return i
}

// cutLocked ends the log at cutBase, a batch boundary in segs[i] at byte
// cutPos.
func (e *Engine) cutLocked(i int, cutBase, cutPos int64) error {
	if err := e.startWritingLocked(); err != nil {
		return err
	}
	// What is kept must be durable (and indexed) before a newer segment can
	// follow it.
	if err := e.syncAllLocked(); err != nil {
		return err
	}
	s := e.segs[i]
	keep := i + 1
	if cutBase == s.base {
		keep = i
	}
	if err := e.dropLocked(keep); err != nil {
		return err
	}
	if keep > i {
		s.end.Store(cutBase)
		s.endPos.Store(cutPos)
		if err := s.writeIndex(true, indexDurable); err != nil {
			return err
		}
		if err := s.dropCheckpoint(); err != nil {
			return err
		}
	}
	return e.startSegmentLocked(cutBase)
}

// dropLocked removes segs[keep:], newest first.
func (e *Engine) dropLocked(keep int) error {
	drop := slices.Clone(e.segs[keep:])
	e.sealing = slices.DeleteFunc(e.sealing, func(s *segment) bool { return slices.Contains(drop, s) })
	e.setSegs(e.segs[:keep:keep])
	defer releaseEach(drop)
	return removeSegments(e.fs, e.dir, drop, true)
}

// beginLocked starts the first segment of a log that has none (a log just
// made, or one whose only segment file a crash took) at base, and syncs the
// directory but not the file. The entry must be durable before any later
// segment's can be (a crash that kept a later segment but not the first
// would move the log's start), but the file's header need not be: until a
// round syncs the segment, the log holds nothing acknowledged, and a crash
// that tears the header leaves a segment with no good frame, which
// recovery replaces by an empty one at the same base. A broker that creates
// a topic of many partitions spares each of them an fsync.
func (e *Engine) beginLocked(base int64) error { return e.newActiveLocked(base, false) }

// startSegmentLocked creates a durable, empty active segment at base that
// ends the log.
func (e *Engine) startSegmentLocked(base int64) error { return e.newActiveLocked(base, true) }

// newActiveLocked makes a new empty segment at base the active one and
// the log's end, its directory entry synced, its file too when syncFile.
func (e *Engine) newActiveLocked(base int64, syncFile bool) error {
	s, err := e.startSegmentFile(base)
	if err != nil {
		return err
	}
	e.setSegs(append(e.segs, s))
	e.active = s
	if syncFile {
		if err := s.f.SyncData(); err != nil {
			return fmt.Errorf("segment %d: sync: %w", base, err)
		}
	}
	if err := engine.SyncDir(e.fs, e.dir); err != nil {
		return err
	}
	e.dirDirty = false
	e.end.Store(base)
	e.setSynced(base)
	return nil
}

// resetLocked empties the log and restarts it at offset: the new start is
// recorded first (the commit point), then every segment goes.
func (e *Engine) resetLocked(offset int64) error {
	if err := e.startWritingLocked(); err != nil {
		return err
	}
	if err := writeStart(e.fs, e.dir, offset); err != nil {
		return err
	}
	e.start.Store(offset)
	if err := e.dropLocked(0); err != nil {
		return err
	}
	e.sealing = nil
	return e.startSegmentLocked(offset)
}

// DeleteBefore implements engine.LogEngine. The new start is written first
// (durably); then whole segments below it leave the log: under the engine's
// locks each log file is renamed aside (setAside), which is quick, and
// deleted once they are released and the last reader inside has left
// (discard), so that appends do not wait for the unlink of a segment of
// hundreds of megabytes. The active segment is never removed here.
func (e *Engine) DeleteBefore(offset int64) error {
	drop, aside, err := e.deleteBefore(offset)
	for i, s := range drop {
		if i < len(aside) && aside[i] != "" {
			path := aside[i]
			s.onLastRelease(func() { e.recycleOrDiscard(path) })
		}
		s.release() // the log's reference: readers inside hold theirs
	}
	return err
}

// deleteBefore does DeleteBefore's work under the engine's locks and
// returns the segments dropped, for the caller to release once they are
// free, with their set-aside file names.
func (e *Engine) deleteBefore(offset int64) ([]*segment, []string, error) {
	defer e.lockAll()()
	if err := e.writable(); err != nil {
		return nil, nil, err
	}
	if offset <= e.start.Load() {
		return nil, nil, nil
	}
	if offset > e.end.Load() {
		if err := e.resetLocked(offset); err != nil {
			return nil, nil, e.fail(fmt.Errorf("delete before %d: %w", offset, err))
		}
		return nil, nil, nil
	}
	if err := writeStart(e.fs, e.dir, offset); err != nil {
		return nil, nil, e.fail(fmt.Errorf("delete before %d: %w", offset, err))
	}
	e.start.Store(offset)
	drop := e.detachBeforeLocked(offset)
	aside, err := setAside(e.fs, e.dir, drop)
	if err != nil {
		return drop, aside, e.fail(fmt.Errorf("delete before %d: %w", offset, err))
	}
	return drop, aside, nil
}

// setAside takes the segments (oldest first) out of the directory as
// removeSegments does, except that each log file is renamed to a
// deletedSuffix name (which open removes) rather than unlinked, and returns
// those names, one per segment ("" for a file already gone), up to the
// first failure. Each rename is durable before the segment's index goes.
func setAside(fs vfs.FS, dir string, segs []*segment) ([]string, error) {
	var aside []string
	for _, s := range segs {
		s.markRemoved()
		to := s.logPath + deletedSuffix
		switch err := fs.Rename(s.logPath, to); {
		case err == nil:
			aside = append(aside, to)
		case oserror.IsNotExist(err):
			aside = append(aside, "")
		default:
			return aside, fmt.Errorf("set aside %s: %w", s.logPath, err)
		}
		if err := engine.SyncDir(fs, dir); err != nil {
			return aside, err
		}
		if err := removeIndexes(fs, s); err != nil {
			return aside, err
		}
	}
	if len(segs) == 0 {
		return aside, nil
	}
	return aside, engine.SyncDir(fs, dir)
}

// discard deletes a file set aside, through Options.Discard when the
// caller gave one. A failure is logged: the next open removes what is left.
func (e *Engine) discard(path string) {
	if e.opts.Discard != nil {
		e.opts.Discard(path)
		return
	}
	if err := removeIfExists(e.fs, path); err != nil {
		e.log.Warn("deleting a dropped segment; the next open retries", "file", path, "err", err)
	}
}

func (e *Engine) setSegs(segs []*segment) {
	e.segMu.Lock()
	e.segs = segs
	e.segMu.Unlock()
}

func releaseEach(segs []*segment) {
	for _, s := range segs {
		s.release()
	}
}

// removeSegments deletes the segments' files one at a time, so that what
// is left after a crash part way is still one contiguous run of segments:
// newestFirst for a suffix (Truncate, recovery), oldest first for a prefix
// (DeleteBefore). Each log file's removal is made durable before its index
// goes, so that no crash leaves a segment file without the sealed index that
// bounds it (it would be scanned to its physical end, past a logical cut).
// The directory is synced at the end, before any file of the same name can
// be created.
func removeSegments(fs vfs.FS, dir string, segs []*segment, newestFirst bool) error {
	for i := range segs {
		s := segs[i]
		if newestFirst {
			s = segs[len(segs)-1-i]
		}
		s.markRemoved()
		if err := removeIfExists(fs, s.logPath); err != nil {
			return err
		}
		if err := engine.SyncDir(fs, dir); err != nil {
			return err
		}
		if err := removeIndexes(fs, s); err != nil {
			return err
		}
	}
	if len(segs) == 0 {
		return nil
	}
	return engine.SyncDir(fs, dir)
}

// removeIndexes removes a removed segment's index and checkpoint files.
// The caller syncs the directory before a segment of the same name can be
// created, so that neither can vouch for another file's bytes.
func removeIndexes(fs vfs.FS, s *segment) error {
	if err := removeIfExists(fs, s.indexPath); err != nil {
		return err
	}
	return removeIfExists(fs, s.ckptPath)
}

func removeIfExists(fs vfs.FS, path string) error {
	if err := fs.Remove(path); err != nil && !oserror.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

func writeStart(fs vfs.FS, dir string, offset int64) error {
	if err := engine.WriteFileAtomic(fs, fs.PathJoin(dir, startFile), encodeStart(offset)); err != nil {
		return fmt.Errorf("write log start: %w", err)
	}
	return nil
}
