package segment

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/minikafka/minikafka/engine"
)

// Read sizes.
const (
	// readBytesMax bounds one read call; a larger budget takes several.
	readBytesMax = 8 << 20
	// scanBytes is what recovery and index rebuilds read at a time.
	scanBytes = 1 << 20
)

// Read implements engine.LogEngine. It reads each segment it touches with
// one ReadAt sized to the budget (more only when batches past that first
// read still fit: a batch larger than the budget, say) into one new buffer
// that the returned batches share, each capped so that appending to one
// cannot touch another. Every returned frame's framing is checked, and its
// CRC when the frame is not known good (see Reading in the package doc).
// The read continues into the next segment while the budget lasts.
func (e *Engine) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	return e.read(nil, offset, maxBytes)
}

var _ engine.BufferReader = (*Engine)(nil)

// ReadInto is Read for a caller that reuses its memory, as a read(2) loop
// reuses its buffer: the bytes are read into buf (a bigger buffer replaces
// it when it is too small) instead of a new buffer per Read, and the buffer
// used is returned, empty, for the next call. A fresh buffer costs the
// allocation, its zeroing and, in a small heap, a garbage collection every
// few MiB, which is most of a cold sequential scan's CPU.
//
// The batches' Data are the caller's until it hands that buffer (or buf) to
// ReadInto again: the engine keeps no reference to either, and checks
// frames as Read does. buf's old contents are overwritten.
func (e *Engine) ReadInto(buf []byte, offset int64, maxBytes int) ([]engine.Batch, []byte, error) {
	mem := &arena{buf: buf[:0]}
	bs, err := e.read(mem, offset, maxBytes)
	if int64(cap(mem.buf)) < mem.taken {
		// The read outgrew buf in several steps: the next one gets room for
		// all of it at once.
		return bs, make([]byte, 0, mem.taken), err
	}
	return bs, mem.buf[:0], err
}

func (e *Engine) read(mem *arena, offset int64, maxBytes int) ([]engine.Batch, error) {
	if e.closed.Load() {
		return nil, engine.ErrClosed
	}
	start, end := e.start.Load(), e.end.Load()
	if err := engine.CheckReadOffset(offset, start, end); err != nil {
		return nil, err
	}
	maxBytes = min(maxBytes, readBudgetMax)
	var out []engine.Batch
	size := 0
	for offset < end {
		s := e.acquire(offset)
		if s == nil {
			if e.closed.Load() {
				return nil, engine.ErrClosed
			}
			return nil, fmt.Errorf("%w: %d: no segment holds it (log changed during the read)", engine.ErrOffsetOutOfRange, offset)
		}
		var (
			next int64
			full bool
			err  error
		)
		out, size, next, full, err = s.read(mem, offset, maxBytes, out, size)
		s.release()
		if err != nil {
			return nil, err
		}
		if full || next <= offset {
			break
		}
		offset = next
	}
	return out, nil
}

// frameReader reads frames of one segment file. Slices it returns alias a
// buffer that is replaced, never overwritten, so they stay valid and can be
// handed to the caller.
type frameReader struct {
	readAt func([]byte, int64) (int, error)
	base   int64 // segment base, for messages
	limit  int64 // bytes at or past limit are not part of the segment
	buf    []byte
	bufPos int64  // buf holds file bytes [bufPos, bufPos+len(buf))
	mem    *arena // where read calls put their bytes; nil: a new buffer each
}

// arena is memory a ReadInto caller lends for the bytes one Read reads. Read
// calls carve it without overlap, so every slice handed out stays valid
// until the caller reuses the memory; when it runs short a bigger one
// replaces it (slices carved before keep the old one alive).
type arena struct {
	buf   []byte // buf[:len(buf)] is carved
	taken int64  // bytes carved by this Read, from every buffer
}

// take returns n bytes for a read call: carved from a, or, for a nil arena
// (Read), a new buffer of exactly n bytes.
func (a *arena) take(n int64) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if int64(cap(a.buf)-len(a.buf)) < n {
		a.buf = make([]byte, 0, max(a.taken+n, 2*int64(cap(a.buf))))
	}
	a.taken += n
	l := int64(len(a.buf))
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// bytes returns the file's bytes [pos, pos+n). When they are not buffered
// it reads, in one call, from pos up to ahead: where the caller expects to
// stop (at least pos+n is read, at most up to limit).
func (r *frameReader) bytes(pos, n, ahead int64) ([]byte, error) {
	if pos+n > r.limit {
		return nil, fmt.Errorf("%w: %d bytes at %d cross the segment end %d", errBadFrame, n, pos, r.limit)
	}
	if pos >= r.bufPos && pos+n <= r.bufPos+int64(len(r.buf)) {
		o := pos - r.bufPos
		return r.buf[o : o+n : o+n], nil
	}
	size := min(max(n, min(ahead-pos, readBytesMax)), r.limit-pos)
	buf := r.mem.take(size)
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
func (r *frameReader) header(pos, wantBase, ahead int64) (frameHeader, error) {
	b, err := r.bytes(pos, frameHeaderLen, ahead)
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

// frame reads the whole frame at pos and, when check is set, verifies its
// checksum.
func (r *frameReader) frame(pos int64, h frameHeader, ahead int64, check bool) ([]byte, error) {
	b, err := r.bytes(pos, h.frameLen(), ahead)
	if err != nil || !check {
		return b, err
	}
	return b, checkFrame(b, h)
}

// follows checks that the frame h at pos ends where another begins: the
// header after it is valid and carries the base offset that h says comes
// next, or h ends the segment at end. A frame served without its CRC check
// goes out only after this: a damaged length or record count then cannot
// pass for a batch, since the next header would not line up.
func (r *frameReader) follows(pos int64, h frameHeader, end, ahead int64) error {
	switch next := h.next(); {
	case next == end:
		return nil
	case next > end:
		return fmt.Errorf("%w: frame at %d ends at offset %d, past the segment's end %d", errBadFrame, pos, next, end)
	}
	at := pos + h.frameLen()
	_, err := r.header(at, h.next(), max(ahead, at+frameHeaderLen))
	return err
}

// corrupt turns a bad frame met while reading into engine.ErrCorrupt with
// its place; other errors pass through.
func (s *segment) corrupt(pos int64, err error) error {
	if errors.Is(err, errBadFrame) {
		return fmt.Errorf("segment %d: frame at byte %d: %w: %w", s.base, pos, engine.ErrCorrupt, err)
	}
	return err
}

// start finds where to start reading for offset (the indexed frame at or
// before it) and where the first read call should end: where an indexed
// frame starts, as far as the budget (plus the frames skipped to reach
// offset) can reach. Ending a read on a frame boundary means that a scan's
// consecutive Reads do not read a frame twice (they share only the header
// read sees past the boundary), so the kernel sees one sequential stream
// and keeps reading ahead.
func (s *segment) start(offset, budget int64) (frameBase, pos, firstEnd int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	frameBase, pos = lookup(s.base, s.entries, offset)
	target := pos + budget + 2*indexIntervalBytes
	if s.endPos.Load() <= target {
		return frameBase, pos, target // the segment's end is the boundary
	}
	i := sort.Search(len(s.entries), func(i int) bool { return int64(s.entries[i].pos) > target }) - 1
	if i >= 0 && int64(s.entries[i].pos) > pos {
		return frameBase, pos, int64(s.entries[i].pos)
	}
	return frameBase, pos, target
}

// read appends to out the batches of s starting with the one that holds
// offset, while their data fits in maxBytes together with the size bytes
// already in out (but always at least one batch overall). It returns out, the
// new size, the offset where it stopped, and whether it stopped because the
// budget was spent.
//
// The first read call covers the budget up to a frame boundary and the
// header just past it, which says whether that frame still fits: a scan's
// Read then costs one read call. Past it, a frame's header is read alone (so
// a frame that does not fit costs 20 bytes), and a frame that fits is read
// together with the rest of the budget and the next header. The bytes go
// into mem (see arena). A read that continues a stream through the segment
// asks the kernel to read ahead of it (see readahead.go).
func (s *segment) read(mem *arena, offset int64, maxBytes int, out []engine.Batch, size int) ([]engine.Batch, int, int64, bool, error) {
	if err := s.ready(); err != nil {
		return out, size, offset, false, err
	}
	frameBase, pos, firstEnd := s.start(offset, int64(max(maxBytes-size, 0)))
	firstEnd += frameHeaderLen
	end := s.end.Load()
	r := frameReader{readAt: s.readAt, base: s.base, limit: s.endPos.Load(), mem: mem}
	defer func(start int64) { s.readahead(start, r.bufPos+int64(len(r.buf))) }(pos)
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
		h, err := r.header(pos, frameBase, max(firstEnd, pos+frameHeaderLen))
		if err != nil {
			return bad(err)
		}
		if h.next() > offset {
			left := int64(maxBytes) - int64(size) - int64(h.length)
			if len(out) > 0 && left < 0 {
				return out, size, frameBase, true, nil
			}
			ahead := max(firstEnd, pos+h.frameLen()+max(left, 0)+frameHeaderLen)
			check := s.mustCheck(pos)
			b, err := r.frame(pos, h, ahead, check)
			if err == nil && !check {
				if err = r.follows(pos, h, end, ahead); err != nil {
					// The frame's header or the next one is damaged:
					// the frame's CRC tells which.
					check, err = true, checkFrame(b, h)
				}
			}
			if err != nil {
				return bad(err)
			}
			if check {
				s.checked(pos, pos+h.frameLen())
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
	frameBase, pos, firstEnd := s.start(offset, 0)
	end := s.end.Load()
	r := frameReader{readAt: s.readAt, base: s.base, limit: s.endPos.Load()}
	for frameBase < end {
		h, err := r.header(pos, frameBase, max(firstEnd, pos+frameHeaderLen))
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
