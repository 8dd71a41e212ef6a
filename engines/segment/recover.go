package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// recover builds the engine's state from its directory; the rules are in the
// package documentation. It runs before the flusher starts, alone.
func (e *Engine) recover() error {
	names, err := e.fs.List(e.dir)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	bases, err := e.tidy(names)
	if err != nil {
		return err
	}
	e.listed = make(map[string]bool, len(names))
	for _, n := range names {
		e.listed[n] = true
	}
	defer func() { e.listed = nil }()
	start, err := e.readStart()
	if err != nil {
		return err
	}
	e.segs = make([]*segment, len(bases))
	for i, b := range bases {
		e.segs[i] = newSegment(e.fs, e.dir, b)
		if i > 0 {
			e.segs[i-1].end.Store(b)
		}
	}
	// Segments wholly below the start are gone whatever else holds (an
	// interrupted DeleteBefore); each non-last one ends at most where the
	// next begins.
	if err := e.dropBeforeLocked(start); err != nil {
		return err
	}
	if len(e.segs) > 0 {
		clean, err := e.openClean()
		if err != nil {
			return err
		}
		if !clean {
			if err := e.dropStaleClean(); err != nil {
				return err
			}
			if err := e.recoverTail(); err != nil {
				return err
			}
		}
	}
	return e.applyStart(start)
}

// tidy removes what an interrupted operation can leave behind (temporary
// files of atomic writes, index and checkpoint files whose segment is gone) and returns the
// segments' base offsets in order.
func (e *Engine) tidy(names []string) ([]int64, error) {
	logs := map[int64]bool{}
	var bases []int64
	for _, n := range names {
		if b, ok := parseName(n, logSuffix); ok {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	var junk []string
	for _, n := range names {
		if n == spareFile {
			e.spare = true
			continue
		}
		b, isIndex := parseName(n, indexSuffix)
		if !isIndex {
			b, isIndex = parseName(n, ckptSuffix)
		}
		if strings.HasSuffix(n, tmpSuffix) || strings.HasSuffix(n, deletedSuffix) || (isIndex && !logs[b]) {
			junk = append(junk, n)
		}
	}
	for _, n := range junk {
		if err := removeIfExists(e.fs, e.fs.PathJoin(e.dir, n)); err != nil {
			return nil, err
		}
		e.log.Info("removed leftover file", "file", n)
	}
	if len(junk) > 0 {
		if err := engine.SyncDir(e.fs, e.dir); err != nil {
			return nil, err
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// mayExist reports whether recovery may find the file at path: whether
// the directory's listing at the start of recovery held it. Recovery
// opens no file the listing did not show (a failed open of a missing file
// is the slow path of the filesystem's errors, and a reopen of thousands
// of idle logs would take mostly that); files it makes itself it knows.
func (e *Engine) mayExist(path string) bool { return e.listed[e.fs.PathBase(path)] }

// readFile is engine.ReadFileIfExists for recovery (see mayExist).
func (e *Engine) readFile(path string) ([]byte, bool, error) {
	if !e.mayExist(path) {
		return nil, false, nil
	}
	return engine.ReadFileIfExists(e.fs, path)
}

func (e *Engine) readStart() (int64, error) {
	path := e.fs.PathJoin(e.dir, startFile)
	b, ok, err := e.readFile(path)
	if err != nil || !ok {
		return 0, err
	}
	off, err := decodeStart(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", path, engine.ErrCorrupt, err)
	}
	return off, nil
}

// openClean is the fast path after a clean Close: the marker, the active
// segment's snapshot index and the segment file's length agree, so nothing
// is scanned and sealed segments are trusted (their indexes load on first
// read).
func (e *Engine) openClean() (bool, error) {
	b, ok, err := e.readFile(e.fs.PathJoin(e.dir, cleanFile))
	if err != nil || !ok {
		return false, err
	}
	e.cleanOnDisk = true
	c, valid := decodeClean(b)
	last := e.segs[len(e.segs)-1]
	if !valid || c.activeBase != last.base {
		return false, nil
	}
	st, err := readIndexFile(e.fs, last.indexPath, last.base)
	if err != nil || st.sealed || st.end != c.end {
		return false, nil
	}
	f, err := e.fs.OpenReadWrite(last.logPath, vfs.WriteCategoryUnspecified)
	if err != nil {
		return false, fmt.Errorf("segment %d: open: %w", last.base, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() < st.endPos {
		f.Close()
		return false, nil
	}
	last.f = f
	last.adoptLocked(st)
	last.trustFrom(st.endPos) // appends from here on are this process's
	e.active = last
	e.end.Store(st.end)
	return true, nil
}

// dropStaleClean removes a clean-shutdown marker that did not hold, so that
// it cannot vouch for anything later.
func (e *Engine) dropStaleClean() error {
	if !e.cleanOnDisk {
		return nil
	}
	e.log.Warn("clean-shutdown marker does not match the log; recovering as after a crash")
	if err := removeIfExists(e.fs, e.fs.PathJoin(e.dir, cleanFile)); err != nil {
		return err
	}
	e.cleanOnDisk = false
	return engine.SyncDir(e.fs, e.dir)
}

// recoverTail is recovery after a crash. Going back from the last segment,
// it passes over segments without a sealed index (the active one, and one
// rolled just before the crash whose index was not written yet) until one
// with a sealed index: that one's end is authoritative. The segments passed
// over are scanned in order, each up to the next one's base; the first that
// falls short (a torn tail) ends the log, and so does an authoritative end
// short of the next segment (an interrupted Truncate).
func (e *Engine) recoverTail() error {
	segs := e.segs
	n := len(segs)
	bounds := make([]int64, n)
	tail := -1 // the segment that ends the log, when it must be cut
	i := n - 1
	for ; i >= 0; i-- {
		s := segs[i]
		bounds[i] = math.MaxInt64
		if i < n-1 {
			bounds[i] = segs[i+1].base
		}
		if !e.mayExist(s.indexPath) {
			continue
		}
		st, err := readIndexFile(e.fs, s.indexPath, s.base)
		if err != nil || !st.sealed || st.end > bounds[i] {
			continue
		}
		if fi, err := e.fs.Stat(s.logPath); err != nil || fi.Size() < st.endPos {
			bounds[i] = st.end // never scan past a sealed end, even a damaged one
			continue
		}
		s.adoptLocked(st)
		if st.end < bounds[i] {
			tail = i
		}
		break
	}
	for j := i + 1; tail < 0 && j < n; j++ {
		next := int64(math.MaxInt64)
		if j < n-1 {
			next = segs[j+1].base
		}
		complete, err := e.scanTail(segs[j], bounds[j], next)
		if err != nil {
			return err
		}
		if !complete {
			tail = j
		}
	}
	if tail < 0 {
		last := segs[n-1]
		// What recovery found is durable from here on. A last segment
		// without a frame has nothing to lose: if a crash takes its file or
		// its header, recovery starts it again at the same base (where the
		// segment before it ends, or at log-start), so an idle log's open
		// syncs nothing.
		if last.endPos.Load() > fileHeaderLen {
			if err := last.f.SyncData(); err != nil {
				return fmt.Errorf("segment %d: sync: %w", last.base, err)
			}
		}
		last.trustFrom(last.endPos.Load()) // appends from here on are this process's
		e.active = last
		e.end.Store(last.end.Load())
		return nil
	}
	return e.cutTail(tail)
}

// scanTail opens and scans one segment of the unvouched run, up to bound,
// and reports whether it is complete: for the last segment (next is
// MaxInt64), every byte is a good frame; for another, its frames reach next,
// the next segment's base. A complete sealed segment gets its index now.
func (e *Engine) scanTail(s *segment, bound, next int64) (bool, error) {
	last := next == math.MaxInt64
	var (
		f   vfs.File
		err error
	)
	if last {
		f, err = e.fs.OpenReadWrite(s.logPath, vfs.WriteCategoryUnspecified)
	} else {
		f, err = e.fs.Open(s.logPath)
	}
	if err != nil {
		return false, fmt.Errorf("segment %d: open: %w", s.base, err)
	}
	s.f = f
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("segment %d: stat: %w", s.base, err)
	}
	from := indexState{base: s.base, end: s.base}
	if e.mayExist(s.ckptPath) {
		if ck, ok := resumeFromCheckpoint(e.fs, s, f, bound, fi.Size()); ok {
			from = ck
		}
	}
	st, err := scanSegmentFrom(f, from, bound)
	if err != nil {
		return false, err
	}
	s.adoptLocked(st)
	s.trustFrom(max(from.endPos, fileHeaderLen)) // the scan checked the rest
	if !last {
		if st.end != next {
			return false, nil
		}
		if err := f.SyncData(); err != nil {
			return false, fmt.Errorf("segment %d: sync: %w", s.base, err)
		}
		if err := s.writeIndex(true, indexLazy); err != nil {
			return false, err
		}
		return true, s.dropCheckpoint()
	}
	return bound == next && st.endPos >= fileHeaderLen && st.endPos == fi.Size(), nil
}

// cutTail ends the log in segs[tail]: it seals that segment where its good
// frames end (the commit point), removes every later segment and starts a
// new active one. A segment with no good frame goes too, and the new one
// takes its place.
func (e *Engine) cutTail(tail int) error {
	s := e.segs[tail]
	end := s.end.Load()
	dropped := e.segs[len(e.segs)-1].base
	e.log.Warn("cutting the log after a crash", "segment", s.base, "end", end, "byte", s.endPos.Load(),
		"after", s.tailKind(), "segments_removed", len(e.segs)-1-tail, "last_segment", dropped)
	keep := tail
	if end > s.base {
		keep = tail + 1
		if s.f != nil { // scanned here: make what it holds durable before sealing it
			if err := s.f.SyncData(); err != nil {
				return fmt.Errorf("segment %d: sync: %w", s.base, err)
			}
		}
		if err := s.writeIndex(true, indexDurable); err != nil {
			return err
		}
		if err := s.dropCheckpoint(); err != nil {
			return err
		}
	}
	if err := e.dropLocked(keep); err != nil {
		return err
	}
	return e.startSegmentLocked(end)
}

// applyStart sets the log start from the start file and the first segment,
// finishing an interrupted DeleteBefore: segments wholly below the start go,
// and a log whose end is below its start restarts empty at the start.
func (e *Engine) applyStart(start int64) error {
	if len(e.segs) == 0 {
		e.start.Store(start)
		return e.beginLocked(start)
	}
	start = max(start, e.segs[0].base)
	if e.end.Load() < start {
		return e.resetLocked(start)
	}
	e.start.Store(start)
	return e.dropBeforeLocked(start)
}

// dropBeforeLocked removes the segments, other than the active one, that
// end at or below offset.
func (e *Engine) dropBeforeLocked(offset int64) error {
	drop := e.detachBeforeLocked(offset)
	defer releaseEach(drop)
	return removeSegments(e.fs, e.dir, drop, false)
}

// detachBeforeLocked takes the segments wholly below offset (never the
// last) out of the log and returns them, for the caller to remove and
// release.
func (e *Engine) detachBeforeLocked(offset int64) []*segment {
	n := 0
	for n < len(e.segs)-1 && e.segs[n].end.Load() <= offset {
		n++
	}
	if n == 0 {
		return nil
	}
	drop := slices.Clone(e.segs[:n])
	e.sealing = slices.DeleteFunc(e.sealing, func(s *segment) bool { return slices.Contains(drop, s) })
	e.setSegs(slices.Clone(e.segs[n:]))
	return drop
}

// Tail kinds: what follows a segment's last good frame (see the package
// documentation's Segment file section).
const (
	tailEOF      = "end of file"
	tailZeroed   = "zeroed tail"
	tailRecycled = "old frames of a recycled file"
	tailTorn     = "torn frame"
	tailSealed   = "sealed end" // an authoritative end, not scanned
)

// tailKind reads the bytes where the header after s's last good frame
// would be and says what they are.
func (s *segment) tailKind() string {
	if s.f == nil {
		return tailSealed
	}
	pos := s.endPos.Load()
	var b [frameHeaderLen]byte
	n, err := s.f.ReadAt(b[:], pos)
	switch {
	case n == 0 && (err == nil || errors.Is(err, io.EOF)):
		return tailEOF
	case !slices.ContainsFunc(b[:n], func(c byte) bool { return c != 0 }):
		return tailZeroed
	case n == frameHeaderLen:
		h, _ := decodeFrameHeader(b[:], s.base)
		if h.length > 0 && h.records > 0 && h.base >= 0 && h.base < s.base {
			return tailRecycled
		}
	}
	return tailTorn
}
