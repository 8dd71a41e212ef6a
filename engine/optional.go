package engine

// Optional interfaces. An engine may implement these beside LogEngine; a
// caller finds them with a type assertion and falls back to LogEngine when
// they are missing, as database/sql does with its driver extensions.
//
//   - BufferReader: reads into memory the caller lends (segment).
//   - Flusher: the interval flush of an engine opened Inline (segment).
//   - SegmentResizer: a roll size that changes while the log is open
//     (segment): a topic's segment.bytes is a dynamic config.
//   - Sizer: the bytes one log takes on its disk (segment), for
//     DescribeLogDirs.

// BufferReader is Read for a caller that reuses its memory, as a read(2) loop
// reuses its buffer. A fresh buffer per Read costs an allocation, its zeroing
// and, in a small Go heap, a garbage collection every few MiB: most of the
// CPU of a cold sequential scan.
type BufferReader interface {
	// ReadInto is Read whose batches' Data are sub-slices of buf, or of a
	// bigger buffer that replaces buf when it is too small. It returns the
	// buffer it used, for the next call. The Data stay the caller's until it
	// lends that buffer again: the engine keeps no reference to it. Every
	// guarantee of Read holds (whole batches, at least one, checksums
	// verified as Read verifies them, ErrCorrupt never returned as data, the same errors).
	ReadInto(buf []byte, offset int64, maxBytes int) ([]Batch, []byte, error)
}

// Flusher is the interval flusher of an engine opened with Options.Inline,
// run by its caller: Flush writes and syncs everything appended so far, as
// one round of the engine's own flusher would. Under SyncAlways a Sync
// already does this; under SyncNever nothing calls it but Close.
type Flusher interface {
	Flush() error
}

// SegmentResizer is an engine that keeps segment files whose roll size may
// change while it is open. SetSegmentBytes applies to the segments rolled
// from then on (the active one rolls at the next append that would take
// it past the new size); what is already written stays as it is. Engines
// without segment files have nothing to resize and do not implement it.
type SegmentResizer interface {
	SetSegmentBytes(n int64)
}

// Sizer is an engine that can say how many bytes of its disk one log
// takes, cheaply (no read of the data): what DescribeLogDirs reports as a
// partition's size. Engines whose logs share files with other logs (one
// LSM for a whole store) cannot say it per log and do not implement it;
// the broker then reports the bytes of the batches the log holds.
type Sizer interface {
	// SizeBytes is the log's size on disk, in bytes, including the
	// engine's framing and what it has accepted but not yet written.
	SizeBytes() int64
}
