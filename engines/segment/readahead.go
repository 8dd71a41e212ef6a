package segment

// Readahead for a sequential reader. The kernel reads ahead of a stream of
// read(2) calls by itself, a window (read_ahead_kb) at a time, and starts
// the next window when the reader reaches a mark in the current one: a
// single reader of a cold file keeps about one request at the device. A
// device that serves several requests at once (an SSD, a virtual disk)
// then gives a fraction of what it can; the hints below keep several
// requests in flight (the merge of this file's branch has the figures).
//
// A reader that goes through a segment in order, far from its end, asks the
// kernel (posix_fadvise WILLNEED) for the file's next readaheadBytes as it
// advances, readaheadStep at a time; the kernel queues those reads at once
// and returns. The reader itself still makes one ReadAt per Read, and
// nothing is buffered in the process: what is read ahead is page cache,
// which the kernel can drop.
//
// A read continues a stream when it starts where the previous read call
// into the segment stopped or at most readaheadStep before it (a scan's
// Read starts at the frame boundary the previous one ended on, which that
// read may have passed by the header after it or by part of a frame that
// did not fit its budget), or at the segment's first frame. A reader within
// readaheadBytes of the segment's written end asks for nothing: the log's
// tail is what a caught-up consumer reads, it was just written and is in
// the page cache, and its small reads should cost no extra system call.
// Concurrent readers of one segment share its two positions; a race costs
// a missed or a repeated hint, which is harmless.
const (
	readaheadBytes = 16 << 20
	readaheadStep  = 4 << 20
)

// readahead is called after a read call covered the segment file's bytes
// [start, end); the caller holds a reference, so s.f is open.
func (s *segment) readahead(start, end int64) {
	prev := s.lastRead.Swap(end)
	if start > prev || start < prev-readaheadStep {
		return // not where the last read stopped: no stream to follow
	}
	if min(s.written.Load(), s.endPos.Load())-end < readaheadBytes {
		return // near the end: recent data, or asked for already
	}
	hi := end + readaheadBytes
	a := s.advised.Load()
	lo := a
	if a < end || a > hi {
		lo = end // another reader's stream, or one before this one
	}
	if hi-lo < readaheadStep || !s.advised.CompareAndSwap(a, hi) {
		return
	}
	// A hint: the read that needs the bytes reports any error.
	_, _ = willNeed(s.f, lo, hi-lo)
}
