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

// Read sizes. A Read asks the file for its whole byte budget at once (plus
// room for the frames skipped before the wanted offset), within these bounds.
const (
	readBytesMin = 16 << 10
	readBytesMax = 8 << 20
	scanBytes    = 1 << 20 // recovery and index rebuilds read this much at a time
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
	f       vfs.File     // opened lazily for sealed segments found at Open
	entries []indexEntry // sparse index; appended under mu by the appender
	loaded  bool         // entries and endPos are known
	removed bool         // the files are deleted: write no index for it

	builder indexBuilder // the appender's; guarded by the engine's mu

	// The unwritten tail of the active segment (see tail.go): bytes
	// [0, written) are in the file, the rest of [0, endPos) in inflight
	// (being written by the flusher) and then pend.
	written  atomic.Int64
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
		builder:   newIndexBuilder(),
	}
	s.refs.Store(1)
	s.end.Store(base)
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
	var hdr [fileHeaderLen]byte
	putFileHeader(hdr[:])
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("segment %d: write header: %w", base, err)
	}
	s.f = f
	s.loaded = true
	s.endPos.Store(fileHeaderLen)
	s.written.Store(fileHeaderLen)
	return s, nil
}

// acquire takes a reader's reference. The caller holds the engine's segMu,
// so the list's reference keeps the count above zero.
func (s *segment) acquire() { s.refs.Add(1) }

// release drops a reference and closes the file with the last one.
func (s *segment) release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
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

// writeIndex persists the index durably, unless the segment was removed.
// sealed says the segment takes no more frames (see indexState.sealed).
func (s *segment) writeIndex(sealed bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return nil
	}
	if err := engine.WriteFileAtomic(s.fs, s.indexPath, encodeIndex(s.stateLocked(sealed))); err != nil {
		return fmt.Errorf("segment %d: write index: %w", s.base, err)
	}
	return nil
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
	complete := st.end == want
	// Frames that stop short of the next segment's base leave a hole: keep
	// what is readable; reads past it report the corruption.
	st.end = want
	s.adoptLocked(st)
	if complete && !s.removed {
		if err := engine.WriteFileAtomic(s.fs, s.indexPath, encodeIndex(s.stateLocked(true))); err != nil {
			return fmt.Errorf("segment %d: write rebuilt index: %w", s.base, err)
		}
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

// frameReader reads frames of one segment file through large reads. Slices
// it returns alias a buffer that is replaced, never overwritten, so they stay
// valid and can be handed to the caller.
type frameReader struct {
	readAt func([]byte, int64) (int, error)
	base   int64 // segment base, for messages
	limit  int64 // bytes at or past limit are not part of the segment
	chunk  int
	buf    []byte // file bytes [bufPos, bufPos+len(buf))
	bufPos int64
}

// bytes returns the file's bytes [pos, pos+n).
func (r *frameReader) bytes(pos int64, n int64) ([]byte, error) {
	if pos+n > r.limit {
		return nil, fmt.Errorf("%w: %d bytes at %d cross the segment end %d", errBadFrame, n, pos, r.limit)
	}
	if pos >= r.bufPos && pos+n <= r.bufPos+int64(len(r.buf)) {
		o := pos - r.bufPos
		return r.buf[o : o+n : o+n], nil
	}
	size := min(max(n, int64(r.chunk)), r.limit-pos)
	buf := make([]byte, size)
	m, err := r.readAt(buf, pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("segment %d: read at %d: %w", r.base, pos, err)
	}
	if int64(m) < n {
		return nil, fmt.Errorf("%w: file ends at %d inside %d bytes at %d", errBadFrame, pos+int64(m), n, pos)
	}
	r.buf, r.bufPos = buf[:m], pos
	return r.buf[:n:n], nil
}

// header reads and checks the frame header at pos.
func (r *frameReader) header(pos, wantBase int64) (frameHeader, error) {
	b, err := r.bytes(pos, frameHeaderLen)
	if err != nil {
		return frameHeader{}, err
	}
	h, err := decodeFrameHeader(b, wantBase)
	if err != nil {
		return h, err
	}
	if pos+h.frameLen() > r.limit {
		return h, fmt.Errorf("%w: %d-byte frame at %d crosses the segment end %d", errBadFrame, h.frameLen(), pos, r.limit)
	}
	return h, nil
}

// frame reads the whole frame at pos and verifies its checksum.
func (r *frameReader) frame(pos int64, h frameHeader) ([]byte, error) {
	b, err := r.bytes(pos, h.frameLen())
	if err != nil {
		return nil, err
	}
	return b, checkFrame(b, h)
}

// scanSegment reads a segment file from its start, checking every frame, up
// to the first bad one or the first whose base offset reaches stopAt. It
// returns the extent of the good frames and their index. An I/O error is
// returned as such; bad bytes only end the extent. A file whose header is bad
// has endPos 0.
func scanSegment(f vfs.File, base, stopAt int64) (indexState, error) {
	st := indexState{base: base, end: base}
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("segment %d: stat: %w", base, err)
	}
	r := frameReader{readAt: f.ReadAt, base: base, limit: fi.Size(), chunk: scanBytes}
	hdr, err := r.bytes(0, fileHeaderLen)
	if err == nil {
		err = checkFileHeader(hdr)
	}
	if err != nil {
		if errors.Is(err, errBadFrame) {
			return st, nil
		}
		return st, err
	}
	b := newIndexBuilder()
	pos := int64(fileHeaderLen)
	for st.end < stopAt {
		h, err := r.header(pos, st.end)
		if err == nil {
			_, err = r.frame(pos, h)
		}
		if errors.Is(err, errBadFrame) {
			break
		}
		if err != nil {
			return st, err
		}
		if e, ok := b.add(base, st.end, pos); ok {
			st.entries = append(st.entries, e)
		}
		pos += h.frameLen()
		st.end = h.next()
	}
	st.endPos = pos
	return st, nil
}

// corrupt turns a bad frame met while reading into engine.ErrCorrupt with
// its place; other errors pass through.
func (s *segment) corrupt(pos int64, err error) error {
	if errors.Is(err, errBadFrame) {
		return fmt.Errorf("segment %d: frame at byte %d: %w: %w", s.base, pos, engine.ErrCorrupt, err)
	}
	return err
}

// read appends to out the batches of s starting with the one that holds
// offset, while their data fits in maxBytes together with the size bytes
// already in out (but always at least one batch overall). It returns out, the
// new size, the offset where it stopped, and whether it stopped because the
// budget was spent.
func (s *segment) read(offset int64, maxBytes int, out []engine.Batch, size int) ([]engine.Batch, int, int64, bool, error) {
	if err := s.ready(); err != nil {
		return out, size, offset, false, err
	}
	s.mu.RLock()
	frameBase, pos := lookup(s.base, s.entries, offset)
	s.mu.RUnlock()
	end, limit := s.end.Load(), s.endPos.Load()
	budget := int64(max(maxBytes-size, 0))
	chunk := min(max(budget+2*indexIntervalBytes, readBytesMin), readBytesMax)
	r := frameReader{readAt: s.readAt, base: s.base, limit: limit, chunk: int(chunk)}
	// A bad frame after good ones ends the read with the good ones: the
	// next read starts at the bad one and reports it.
	bad := func(err error) ([]engine.Batch, int, int64, bool, error) {
		if len(out) > 0 && errors.Is(err, errBadFrame) {
			return out, size, frameBase, true, nil
		}
		return out, size, frameBase, false, s.corrupt(pos, err)
	}
	for frameBase < end {
		if len(out) > 0 && size >= maxBytes {
			return out, size, frameBase, true, nil
		}
		h, err := r.header(pos, frameBase)
		if err != nil {
			return bad(err)
		}
		if h.next() > offset {
			if len(out) > 0 && int64(size)+int64(h.length) > int64(maxBytes) {
				return out, size, frameBase, true, nil
			}
			b, err := r.frame(pos, h)
			if err != nil {
				return bad(err)
			}
			out = append(out, engine.Batch{BaseOffset: h.base, Records: h.records, Data: b[frameHeaderLen:]})
			size += int(h.length)
		}
		pos += h.frameLen()
		frameBase = h.next()
	}
	return out, size, frameBase, false, nil
}

// seek finds the batch boundary at or below offset: the base offset and file
// position of the frame that holds offset, or of the segment end when offset
// is at or past it.
func (s *segment) seek(offset int64) (frameBase, pos int64, err error) {
	if err := s.ready(); err != nil {
		return 0, 0, err
	}
	s.mu.RLock()
	frameBase, pos = lookup(s.base, s.entries, offset)
	s.mu.RUnlock()
	end := s.end.Load()
	r := frameReader{readAt: s.readAt, base: s.base, limit: s.endPos.Load(), chunk: readBytesMin}
	for frameBase < end {
		h, err := r.header(pos, frameBase)
		if err != nil {
			return 0, 0, s.corrupt(pos, err)
		}
		if h.next() > offset {
			return frameBase, pos, nil
		}
		pos += h.frameLen()
		frameBase = h.next()
	}
	return frameBase, pos, nil
}

// relFits reports whether a frame at offset can be indexed in s: index
// entries hold the offset relative to the segment base in 4 bytes.
func (s *segment) relFits(offset int64) bool { return offset-s.base <= math.MaxUint32 }
