package segment

import (
	"fmt"
	"io"
	"slices"

	"github.com/minikafka/minikafka/engine"
)

// The active segment's tail lives in memory until the flusher writes it:
// Append copies its frame into pend under the append lock and returns; the
// flusher moves pend to inflight, writes it with one WriteAt outside every
// lock and advances written. So appenders make no system call, and one write
// carries every frame appended since the last one (as a group-commit loop
// over a plain file does). Readers copy bytes at or past written from
// inflight and pend under bufMu, and read the rest from the file.

const (
	// spareBytesMax bounds the buffer an active segment keeps for its next
	// pend; a sealed one keeps none.
	spareBytesMax = 1 << 20
	// pendBytesMax bounds the unwritten tail: an Append that leaves more
	// writes it itself (waiting for a write or sync in progress), so that
	// appenders faster than the disk are held back instead of filling memory.
	pendBytesMax = 4 << 20
)

// appendFrame encodes b's frame at the end of the segment's tail and
// returns its file position and the tail's length in bytes. The caller holds
// the engine's append lock.
func (s *segment) appendFrame(b engine.Batch) (pos int64, pending int) {
	n := frameHeaderLen + len(b.Data)
	pos = s.endPos.Load()
	s.bufMu.Lock()
	off := len(s.pend)
	s.pend = slices.Grow(s.pend, n)[:off+n]
	putFrame(s.pend[off:], b.BaseOffset, b.Records, b.Data)
	s.bufMu.Unlock()
	return pos, off + n
}

// flush writes the tail to the file and, if sync is set, fdatasyncs it.
// ioMu makes one flush at a time per file: the flusher's, or an appender's
// held back by pendBytesMax.
func (s *segment) flush(sync bool) error {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if err := s.drain(); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	if err := s.f.SyncData(); err != nil {
		return fmt.Errorf("segment %d: sync: %w", s.base, err)
	}
	return nil
}

// drain writes the tail to the file; the caller holds ioMu.
func (s *segment) drain() error {
	s.bufMu.Lock()
	buf, pos := s.pend, s.written.Load()
	if s.inflight != nil {
		s.bufMu.Unlock()
		return fmt.Errorf("segment %d: an earlier write at %d failed", s.base, pos)
	}
	if len(buf) == 0 {
		s.bufMu.Unlock()
		return nil
	}
	s.inflight, s.pend, s.spare = buf, s.spare[:0], nil
	s.bufMu.Unlock()

	_, err := s.f.WriteAt(buf, pos)

	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	if err != nil {
		// inflight stays, readable; the engine fails from here on.
		return fmt.Errorf("segment %d: write %d bytes at %d: %w", s.base, len(buf), pos, err)
	}
	s.written.Store(pos + int64(len(buf)))
	s.inflight = nil
	if cap(buf) <= spareBytesMax {
		s.spare = buf[:0]
	}
	return nil
}

// readAt reads file bytes [pos, pos+len(b)) of the segment, wherever they
// are: in the file below written, in memory above it. Like io.ReaderAt it
// returns fewer bytes only with an error (io.EOF past the end).
func (s *segment) readAt(b []byte, pos int64) (int, error) {
	end := pos + int64(len(b))
	if end <= s.written.Load() {
		return s.f.ReadAt(b, pos)
	}
	s.bufMu.Lock()
	w := s.written.Load()
	tail, copied := 0, 0
	if end > w {
		from := max(pos, w)
		tail = int(end - from)
		copied = s.copyTailLocked(b[from-pos:], from-w)
	}
	s.bufMu.Unlock()
	// The file's bytes below written never change: read them unlocked.
	if head := len(b) - tail; head > 0 {
		n, err := s.f.ReadAt(b[:head], pos)
		if n < head {
			if err == nil {
				err = io.EOF
			}
			return n, err
		}
	}
	if copied < tail {
		return len(b) - tail + copied, io.EOF
	}
	return len(b), nil
}

// copyTailLocked copies into dst the tail's bytes from rel bytes past
// written (inflight, then pend), and returns how many there were.
func (s *segment) copyTailLocked(dst []byte, rel int64) int {
	n := 0
	if rel < int64(len(s.inflight)) {
		n = copy(dst, s.inflight[rel:])
		rel = 0
	} else {
		rel -= int64(len(s.inflight))
	}
	if n < len(dst) && rel < int64(len(s.pend)) {
		n += copy(dst[n:], s.pend[rel:])
	}
	return n
}

// dropSpare lets go of the spare buffer of a segment that takes no more
// frames.
func (s *segment) dropSpare() {
	s.bufMu.Lock()
	s.spare = nil
	s.bufMu.Unlock()
}

// unwritten is how many bytes of the tail are not yet being written.
func (s *segment) unwritten() int {
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	return len(s.pend)
}
