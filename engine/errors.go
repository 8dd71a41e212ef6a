package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every engine returns these values, possibly wrapped with
// context; callers compare with errors.Is. Each says what the caller should do.
var (
	// ErrClosed: the engine was closed. Reopen it to go on.
	ErrClosed = errors.New("engine: closed")

	// ErrOffsetOutOfRange: the offset is negative, below StartOffset or above
	// EndOffset. A reader should re-fetch the log's bounds.
	ErrOffsetOutOfRange = errors.New("engine: offset out of range")

	// ErrNotContiguous: an appended batch does not start at EndOffset. The
	// caller's idea of the log end is stale; re-read EndOffset.
	ErrNotContiguous = errors.New("engine: batch base offset is not the log end offset")

	// ErrEmptyBatch: a batch with no bytes or no records. Reject the request.
	ErrEmptyBatch = errors.New("engine: empty batch")

	// ErrBatchTooLarge: a batch over Options.MaxBatchBytes. Reject the request.
	ErrBatchTooLarge = errors.New("engine: batch larger than the maximum batch size")

	// ErrCorrupt: stored bytes fail their checksum or framing. The data is not
	// returned; the partition needs repair (re-replication) or an operator.
	ErrCorrupt = errors.New("engine: corrupt data")

	// ErrWrongEngine: the directory holds another engine's data. Open it with
	// that engine, or choose an empty directory.
	ErrWrongEngine = errors.New("engine: directory belongs to another engine")

	// ErrUnsupported: the engine lacks a capability the options ask for (for
	// example a custom filesystem). Choose another engine or drop the option.
	ErrUnsupported = errors.New("engine: unsupported option")

	// ErrUnknownEngine: no engine is registered under that name.
	ErrUnknownEngine = errors.New("engine: unknown engine")
)

// CheckReadOffset is Read's bounds rule: nil when offset is in [start, end]
// (end itself reads nothing), else ErrOffsetOutOfRange naming the bounds.
func CheckReadOffset(offset, start, end int64) error {
	if offset < start || offset > end {
		return fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	return nil
}
