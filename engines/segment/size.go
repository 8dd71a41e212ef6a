package segment

import "github.com/minikafka/minikafka/engine"

var _ engine.Sizer = (*Engine)(nil)

// SizeBytes is engine.Sizer: the bytes of the log's segment files, as
// Kafka's log size counts them (indexes and checkpoints excluded). A
// segment whose extent is known counts up to its last frame, which leaves
// out the unused tail of a recycled or preallocated file and counts the
// frames not yet written; a sealed segment not yet read since Open counts
// its file's size.
func (e *Engine) SizeBytes() int64 {
	e.segMu.RLock()
	defer e.segMu.RUnlock()
	var n int64
	for _, s := range e.segs {
		n += s.sizeBytes()
	}
	return n
}

func (s *segment) sizeBytes() int64 {
	s.mu.RLock()
	loaded := s.loaded
	s.mu.RUnlock()
	if loaded {
		return s.endPos.Load()
	}
	fi, err := s.fs.Stat(s.logPath)
	if err != nil {
		return 0 // removed meanwhile: it holds nothing any more
	}
	return fi.Size()
}
