package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// segment is one segment file and its sparse index.
//
// Its bytes below endPos never change once written: the engine only ever
// appends to the active segment and never truncates or overwrites a file
// (Truncate and recovery end a segment logically and start a new file). So a
// reader that saw endPos may read up to it without any lock.
type segment struct {
	base      int64
	fs        vfs.FS
	logPath   string
	indexPath string
	ckptPath  string

	// refs counts the engine's segment list (one) and every reader inside
	// the segment; the file is closed when it drops to zero.
	refs atomic.Int32

	// end is the offset just past the segment's last frame: for a sealed
	// segment the next segment's base, for the active one the log end.
	end atomic.Int64
	// endPos is the byte position just past the last frame. It is published
	// after the frame's bytes are written.
	endPos atomic.Int64

	mu      sync.RWMutex
	discard func()       // run once the last reference is dropped (DeleteBefore's set-aside file)
	f       vfs.File     // opened lazily for sealed segments found at Open
	entries []indexEntry // sparse index; appended under mu by the appender
	loaded  bool         // entries and endPos are known
	removed bool         // the files are deleted: write no index for it

	// Frames at byte positions in [checkFrom, checkTo) have their CRC
	// checked when a read serves them; the others are trusted (see Reading
	// in the package doc). Frames from checkTo on were framed by this
	// process or checked by a scan in it: a segment begun in this process
	// has checkTo 0, one found at Open math.MaxInt64 until a scan lowers it.
	// checkFrom moves forward over each frame checked right at it, so data
	// from before Open that is read in order is checked once.
	checkFrom atomic.Int64
	checkTo   atomic.Int64

	// A sequential reader's progress (see readahead.go): lastRead is the
	// file position where the last read call stopped, advised where the
	// last readahead hint ended.
	lastRead atomic.Int64
	advised  atomic.Int64

	builder indexBuilder // the appender's; guarded by the engine's mu
	ckpt    checkpointer // guarded by the engine's flushMu

	// The unwritten tail of the active segment (see tail.go): bytes
	// [0, written) are in the file, the rest of [0, endPos) in inflight
	// (being written by the flusher) and then pend.
	written  atomic.Int64
	ioMu     sync.Mutex // one write or sync of the file at a time
	bufMu    sync.Mutex
	inflight []byte
	pend     []byte
	spare    []byte
}

func newSegment(fs vfs.FS, dir string, base int64) *segment {
	s := &segment{
		base:      base,
		fs:        fs,
		logPath:   fs.PathJoin(dir, logName(base)),
		indexPath: fs.PathJoin(dir, indexName(base)),
		ckptPath:  fs.PathJoin(dir, ckptName(base)),
		builder:   newIndexBuilder(),
	}
	s.refs.Store(1)
	s.end.Store(base)
	s.checkFrom.Store(fileHeaderLen)
	s.checkTo.Store(math.MaxInt64)
	s.lastRead.Store(fileHeaderLen) // a read from the first frame starts a stream
	return s
}

// createSegment makes a new, empty segment file at base and writes its file
// header. The caller syncs the directory.
func createSegment(fs vfs.FS, dir string, base int64) (*segment, error) {
	s := newSegment(fs, dir, base)
	f, err := fs.Create(s.logPath, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("segment %d: create: %w", base, err)
	}
	if err := s.begin(f); err != nil {
		return nil, err
	}
	return s, nil
}

// begin makes f, a new or recycled file, the empty segment's: it writes the
// file header and sets the extent just past it. On failure f is closed.
func (s *segment) begin(f vfs.File) error {
	var hdr [fileHeaderLen]byte
	putFileHeader(hdr[:])
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		f.Close()
		return fmt.Errorf("segment %d: write header: %w", s.base, err)
	}
	s.f = f
	s.loaded = true
	s.checkTo.Store(0) // every frame of this file is framed from here on
	s.endPos.Store(fileHeaderLen)
	s.written.Store(fileHeaderLen)
	return nil
}

// acquire takes a reader's reference. The caller holds the engine's segMu,
// so the list's reference keeps the count above zero.
func (s *segment) acquire() { s.refs.Add(1) }

// release drops a reference and closes the file with the last one, then
// runs discard if set: a reader still inside a segment DeleteBefore dropped
// reads it whole, and its file is deleted (or cut, step by step, by the
// broker's deleter) only once the reader has left.
func (s *segment) release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.closeCheckpoint() // the last reference: no flusher round holds s
	discard := s.discard
	s.discard = nil
	s.mu.Unlock()
	if discard != nil {
		discard()
	}
}

// onLastRelease sets what release runs after the last reference; the
// caller still holds one.
func (s *segment) onLastRelease(fn func()) {
	s.mu.Lock()
	s.discard = fn
	s.mu.Unlock()
}

// markRemoved stops the segment from writing its index file again: its
// files are about to be deleted.
func (s *segment) markRemoved() {
	s.mu.Lock()
	s.removed = true
	s.mu.Unlock()
}

// state snapshots the index and extent, as an index file records them.
func (s *segment) state(sealed bool) indexState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stateLocked(sealed)
}

func (s *segment) stateLocked(sealed bool) indexState {
	end := s.end.Load()
	entries := make([]indexEntry, 0, len(s.entries))
	for _, e := range s.entries {
		if s.base+int64(e.rel) < end { // entries past a logical cut are dead
			entries = append(entries, e)
		}
	}
	return indexState{sealed: sealed, base: s.base, end: end, endPos: s.endPos.Load(), entries: entries}
}

// Index writes. A sealed index that ends a segment early (a Truncate's or
// recovery's cut) is a commit point and the active segment's snapshot goes
// with the clean-shutdown marker: both are written durably. The index of a
// segment sealed whole (a roll, a rebuild) is only a shortcut: it is written
// after the segment's data is durable, without fsyncs of its own, so a
// roll costs the flusher no extra disk waits. If a crash loses or tears it,
// its checksum fails and the segment is scanned instead.
const (
	indexDurable = true
	indexLazy    = false
)

// writeIndex writes the index file, unless the segment was removed. sealed
// says the segment takes no more frames (see indexState.sealed).
func (s *segment) writeIndex(sealed, durable bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return nil
	}
	return s.writeIndexLocked(sealed, durable)
}

func (s *segment) writeIndexLocked(sealed, durable bool) error {
	b := encodeIndex(s.stateLocked(sealed))
	var err error
	if durable {
		err = engine.WriteFileAtomic(s.fs, s.indexPath, b)
	} else {
		err = writeFileLazy(s.fs, s.indexPath, b)
	}
	if err != nil {
		return fmt.Errorf("segment %d: write index: %w", s.base, err)
	}
	return nil
}

// writeFileLazy replaces path with b through a temporary file and a rename,
// so a reader never sees a half-written file, but syncs nothing.
func writeFileLazy(fs vfs.FS, path string, b []byte) error {
	tmp := path + tmpSuffix
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fs.Rename(tmp, path)
}

// adopt installs a known index state (from an index file or a scan).
func (s *segment) adoptLocked(st indexState) {
	s.entries = st.entries
	s.endPos.Store(st.endPos)
	s.written.Store(st.endPos)
	s.end.Store(st.end)
	s.builder = builderFor(st.entries)
	s.loaded = true
}

// trustFrom records that reads need not check the frames from byte pos on:
// a scan in this process checked them up to the extent, or the extent is
// pos and every frame after it will be framed by this process.
func (s *segment) trustFrom(pos int64) {
	for {
		to := s.checkTo.Load()
		if to <= pos || s.checkTo.CompareAndSwap(to, pos) {
			return
		}
	}
}

// mustCheck reports whether a read must check the CRC of the frame at pos.
func (s *segment) mustCheck(pos int64) bool {
	return pos >= s.checkFrom.Load() && pos < s.checkTo.Load()
}

// checked records that the frame [pos, next) passed its CRC check: when it
// is the first frame not yet checked, the checked prefix grows past it.
func (s *segment) checked(pos, next int64) {
	s.checkFrom.CompareAndSwap(pos, next)
}

// ready makes a sealed segment readable: opens its file and loads its index
// file, or rebuilds the index by scanning (up to the next segment's base,
// never further) when the file is missing, bad, or not a sealed index ending
// where the segment must end.
func (s *segment) ready() error {
	s.mu.RLock()
	ok := s.loaded && s.f != nil
	s.mu.RUnlock()
	if ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		f, err := s.fs.Open(s.logPath)
		if err != nil {
			return fmt.Errorf("segment %d: open: %w", s.base, err)
		}
		s.f = f
	}
	if s.loaded {
		return nil
	}
	want := s.end.Load()
	if st, err := readIndexFile(s.fs, s.indexPath, s.base); err == nil && st.sealed && st.end == want {
		s.adoptLocked(st)
		return nil
	}
	st, err := scanSegment(s.f, s.base, want)
	if err != nil {
		return err
	}
	s.trustFrom(fileHeaderLen)
	complete := st.end == want
	// Frames that stop short of the next segment's base leave a hole: keep
	// what is readable; reads past it report the corruption.
	st.end = want
	s.adoptLocked(st)
	if complete && !s.removed {
		return s.writeIndexLocked(true, indexLazy)
	}
	return nil
}

func readIndexFile(fs vfs.FS, path string, base int64) (indexState, error) {
	f, err := fs.Open(path)
	if err != nil {
		return indexState{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return indexState{}, err
	}
	return decodeIndex(b, base)
}

// scanSegment reads a segment file from its start, checking every frame, up
// to the first bad one or the first whose base offset reaches stopAt. It
// returns the extent of the good frames and their index. An I/O error is
// returned as such; bad bytes only end the extent. A file whose header is bad
// has endPos 0.
func scanSegment(f vfs.File, base, stopAt int64) (indexState, error) {
	return scanSegmentFrom(f, indexState{base: base, end: base}, stopAt)
}

// scanSegmentFrom is scanSegment resumed from a known frame boundary: the
// extent st (its end and endPos, with the entries below it). An st with
// endPos 0 starts at the file header.
func scanSegmentFrom(f vfs.File, st indexState, stopAt int64) (indexState, error) {
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("segment %d: stat: %w", st.base, err)
	}
	r := frameReader{readAt: f.ReadAt, base: st.base, limit: fi.Size()}
	if st.endPos == 0 {
		hdr, err := r.bytes(0, fileHeaderLen, scanBytes)
		if err == nil {
			err = checkFileHeader(hdr)
		}
		if err != nil {
			if errors.Is(err, errBadFrame) {
				return st, nil
			}
			return st, err
		}
		st.endPos = fileHeaderLen
	}
	return scanFrames(&r, st, stopAt)
}

// scanFrames checks frames from the boundary st.endPos (offset st.end) up to
// the first bad one or the first whose base offset reaches stopAt, and
// returns st extended by them, with their index entries.
func scanFrames(r *frameReader, st indexState, stopAt int64) (indexState, error) {
	b := builderFor(st.entries)
	pos := st.endPos
	for st.end < stopAt {
		h, err := r.header(pos, st.end, pos+scanBytes)
		if err == nil {
			_, err = r.frame(pos, h, pos+scanBytes, true)
		}
		if errors.Is(err, errBadFrame) {
			break
		}
		if err != nil {
			return st, err
		}
		if e, ok := b.add(st.base, st.end, pos); ok {
			st.entries = append(st.entries, e)
		}
		pos += h.frameLen()
		st.end = h.next()
	}
	st.endPos = pos
	return st, nil
}

// relFits reports whether a frame at offset can be indexed in s: index
// entries hold the offset relative to the segment base in 4 bytes.
func (s *segment) relFits(offset int64) bool { return offset-s.base <= math.MaxUint32 }
