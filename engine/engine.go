// Package engine defines the storage contract of mini-kafka: one LogEngine
// holds one partition's log. The broker and the replication code talk only to
// this interface; engines live in ../engines and register themselves here, as
// database/sql drivers do.
//
// # The contract
//
//   - A log is a sequence of opaque batches. Each batch occupies Records
//     consecutive offsets starting at BaseOffset. Engines never parse Data.
//   - Offsets are assigned by the caller and checked by the engine: Append
//     refuses a batch whose BaseOffset is not EndOffset() (ErrNotContiguous).
//     A leader assigns offsets itself; a follower appends the leader's offsets
//     unchanged. It is the same call in both roles.
//   - Append is ordered and returns once the batch is readable; it does not wait
//     for the disk. Durability is a separate wait, Sync, that many callers share:
//     one flusher, one fsync completes every waiter queued before it (group
//     commit). What Sync waits for depends on the SyncPolicy.
//   - Read returns whole batches, starting with the one that holds the requested
//     offset, and at least one batch even if it is larger than maxBytes (Kafka's
//     rule, so a consumer can always make progress).
//   - Truncate drops a suffix (a follower whose log diverged from its leader);
//     DeleteBefore moves the log start forward (retention, or a follower that
//     must restart at the leader's log start).
//
// All methods are safe for concurrent use. Every method called after Close
// returns ErrClosed.
//
// Opening a log recovers it: a torn or unsynced tail is cut, and whatever
// Open keeps is durable when Open returns (an engine fsyncs what it recovered
// before it says so), so a second crash right after a reopen cannot take back
// a batch a reader has already seen.
//
// # Optional behaviour
//
// Capabilities are declared at registration, not guessed: see Capabilities.
// Suites skip what an engine does not declare, and say why.
//
// A durable engine reports its sync rounds to Options.Observer when one is
// set (see Observer); SyncMeter does the bookkeeping for it.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/clock"
)

// Batch is one unit of the log: opaque bytes that occupy Records offsets.
type Batch struct {
	// BaseOffset is the offset of the first record in the batch.
	BaseOffset int64
	// Records is how many offsets the batch occupies; the next batch starts
	// at BaseOffset+Records. Always at least 1.
	Records int32
	// Data is stored and returned byte for byte. A Data slice returned by Read
	// belongs to the caller: the engine never touches it again.
	Data []byte
}

// NextOffset is the offset just past the batch.
func (b Batch) NextOffset() int64 { return b.BaseOffset + int64(b.Records) }

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.NextOffset() - 1 }

// Validate checks what Append requires of a batch before it looks at the
// log: at least one record and some bytes (otherwise ErrEmptyBatch), and at
// most maxBatchBytes of Data (otherwise ErrBatchTooLarge), both wrapped with
// the sizes. maxBatchBytes is the engine's limit once Options.WithDefaults
// has run. Every engine's Append starts with it, so that every engine refuses
// the same batches with the same errors.
func (b Batch) Validate(maxBatchBytes int) error {
	if b.Records < 1 || len(b.Data) == 0 {
		return fmt.Errorf("%w: %d records, %d bytes", ErrEmptyBatch, b.Records, len(b.Data))
	}
	if len(b.Data) > maxBatchBytes {
		return fmt.Errorf("%w: %d > %d bytes", ErrBatchTooLarge, len(b.Data), maxBatchBytes)
	}
	return nil
}

// CopyBatches is what Read returns from an in-memory log: copies of
// batches[from:], in order, the first always and the rest while their Data
// fits in maxBytes.
func CopyBatches(batches []Batch, from, maxBytes int) []Batch {
	var out []Batch
	size := 0
	for _, b := range batches[from:] {
		if len(out) > 0 && size+len(b.Data) > maxBytes {
			break
		}
		size += len(b.Data)
		b.Data = append([]byte(nil), b.Data...)
		out = append(out, b)
	}
	return out
}

// LogEngine is one partition's log. See the package documentation for the
// contract; each method documents its errors.
type LogEngine interface {
	// Append adds b at the end of the log. b.BaseOffset must equal EndOffset()
	// (otherwise ErrNotContiguous), b.Records must be at least 1 and Data
	// non-empty (otherwise ErrEmptyBatch), and len(Data) at most
	// Options.MaxBatchBytes (otherwise ErrBatchTooLarge). When Append returns
	// nil the batch is readable and EndOffset has moved past it; it is durable
	// only once Sync says so. A failed write leaves the engine refusing further
	// appends with that error (the error is sticky) rather than risk a hole;
	// reads of what is already in the log keep working. Append does not keep
	// b.Data after it returns: the caller may reuse the buffer.
	Append(b Batch) error

	// Sync waits until every batch below offset end is durable under the
	// engine's SyncPolicy: with SyncAlways it returns after an fsync that covers
	// them (shared with every other waiter: group commit); with SyncInterval and
	// SyncNever once they would survive a crash of this process (the OS holds
	// them, or the engine made them durable), without waiting for an fsync of
	// their own. A broker acknowledges after Sync, so a kill -9 loses nothing
	// acknowledged under any policy. It returns ctx.Err() if ctx ends first, and
	// the flusher's error if an fsync failed (that error is sticky). An end past
	// EndOffset is treated as EndOffset.
	Sync(ctx context.Context, end int64) error

	// Read returns whole batches starting with the one that holds offset, as
	// many as fit in maxBytes of Data but always at least one. Reading at
	// EndOffset returns no batches and no error (a consumer at the tail).
	// An offset below StartOffset, above EndOffset or negative returns
	// ErrOffsetOutOfRange. A batch that fails its checksum or framing returns
	// ErrCorrupt; bytes found corrupt are never returned as data, and a batch
	// is never returned under another batch's offsets. An engine may skip the
	// checksum of bytes it knows good (framed by this process from memory, or
	// checked since Open: the segment engine does, see its package doc),
	// since the broker's batches carry a CRC of their own that every
	// receiver verifies; data from before Open that was not checked since is
	// always checked.
	Read(offset int64, maxBytes int) ([]Batch, error)

	// Truncate drops every batch that holds an offset at or above offset. If
	// offset falls inside a batch, that whole batch goes too, so afterwards
	// EndOffset() <= offset, and always at a batch boundary. Truncate is durable
	// when it returns. An offset above EndOffset or below StartOffset returns
	// ErrOffsetOutOfRange.
	Truncate(offset int64) error

	// DeleteBefore moves the log start to offset: reads below it return
	// ErrOffsetOutOfRange from then on. Space is reclaimed at the engine's
	// granularity (a segment, a compaction) and may lag. An offset at or below
	// StartOffset does nothing; an offset above EndOffset empties the log and
	// makes offset both its start and its end (a follower that must begin where
	// its leader's log begins). The new start is durable when it returns.
	DeleteBefore(offset int64) error

	// StartOffset is the first offset that can be read.
	StartOffset() int64
	// EndOffset is the offset the next appended batch must start at.
	EndOffset() int64

	// Close syncs what was appended, releases the files and makes every later
	// call return ErrClosed. A second Close returns ErrClosed.
	Close() error
}

// SyncPolicy says when appended data reaches stable storage.
type SyncPolicy int

const (
	// SyncAlways: Sync returns only after an fsync that covers the batch.
	SyncAlways SyncPolicy = iota
	// SyncInterval: Sync returns once the data is out of the process's
	// hands; a background flusher fsyncs every Options.SyncInterval. A power
	// loss loses at most about one interval; a process crash nothing Sync
	// covered.
	SyncInterval
	// SyncNever: as SyncInterval, but data reaches the disk when the OS
	// writes it back, or at Close.
	SyncNever
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return "unknown"
}

// ParseSyncPolicy is the inverse of SyncPolicy.String.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, &UnknownSyncPolicyError{s}
}

// UnknownSyncPolicyError names a sync policy that does not exist.
type UnknownSyncPolicyError struct{ Name string }

func (e *UnknownSyncPolicyError) Error() string {
	return "engine: unknown sync policy " + `"` + e.Name + `"` + " (want always, interval or never)"
}

// Defaults used when an Options field is zero.
const (
	DefaultMaxBatchBytes = 8 << 20
	DefaultSegmentBytes  = 256 << 20
	DefaultSyncInterval  = 100 * time.Millisecond
)

// Options configure an engine. The zero value is usable: SyncAlways, the OS
// filesystem and the defaults above.
type Options struct {
	Sync SyncPolicy
	// SyncInterval is the flush period under SyncInterval.
	SyncInterval time.Duration
	// FS is where the engine does its I/O. Nil means the OS filesystem. An
	// engine without Capabilities.CustomFS refuses any other FS with
	// ErrUnsupported.
	FS vfs.FS
	// MaxBatchBytes bounds len(Batch.Data) in Append.
	MaxBatchBytes int
	// SegmentBytes is the roll size for engines that keep segment files; others
	// ignore it.
	SegmentBytes int64
	// Clock drives SyncInterval flushes. Nil means clock.Real.
	Clock clock.Clock
	// Logger receives the engine's notices (recovery, truncated tails). Nil
	// discards them.
	Logger *slog.Logger
	// Observer is told about every sync round of a durable engine: its
	// duration, how many appends it made durable, and its failure. Nil means
	// none. See Observer for the contract.
	Observer Observer
	// Discard, when set, deletes a file the engine no longer needs, once
	// the engine has renamed it aside (a name its Open removes, should a
	// crash come first) and released its locks: the broker paces large
	// deletions, since one unlink of a large file holds back every fsync on
	// the disk. Nil removes the file at once. Engines that drop whole files
	// (segment's DeleteBefore) use it; others ignore it.
	Discard func(path string)
	// Inline asks for an engine that starts no goroutine of its own: a Sync
	// makes its fsyncs on the calling goroutine, and under SyncInterval
	// nothing is flushed until the caller calls Flush (the engine is then a
	// Flusher). A deterministic simulator, which runs every broker on one
	// goroutine, needs it. An engine without Capabilities.Inline refuses it
	// with ErrUnsupported.
	Inline bool
	// DeleteRate is how fast, in bytes per second, a store that paces its
	// own reclaiming of a deleted log's space (pebble's) does it; 0 means
	// the engine's default, negative unpaced. Stores that hand files to
	// Discard leave the pace to it.
	DeleteRate int64
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// CustomFS reports whether o names a filesystem other than the OS one.
func (o Options) CustomFS() bool { return o.FS != nil && o.FS != vfs.Default }

// Observer is told about a durable engine's sync rounds, so that whoever
// opened the engine (the broker's metrics) sees the real fsync latency and
// group-commit size of every engine, including those that do their own I/O.
//
// A sync round is one fsync, or one synced commit, of the engine's group
// commit: segment's flusher syncing the active segment, pebble's WAL sync,
// badger's synced transaction(s) of everything pending. The contract:
//
//   - Synced is called once after each round that made at least one append
//     durable, and after each round that failed. A round that covered no
//     append not already reported (an idle interval tick, the sync a
//     Truncate makes of nothing new) is not reported, so an event with
//     Batches == 0 always carries an Err. A failed engine makes no more
//     rounds (its error is sticky), so each failure is reported once.
//   - Every append made durable is counted in exactly one event: summing
//     Batches counts the appends made durable, and that sum over the number
//     of events is the mean group-commit size. An append dropped before any round
//     covered it (a Truncate) is counted in none. Syncs that Close, Truncate
//     or DeleteBefore make themselves are rounds like the flusher's.
//   - Under SyncAlways, a round is reported before the Syncs it completes
//     return: once Sync(ctx, end) returns nil, events have counted every
//     append below end.
//   - Synced runs on the engine's own goroutines (its flusher, or the caller
//     of Close, Truncate or DeleteBefore), possibly on several at once and
//     possibly while the engine holds its locks: it must be safe for
//     concurrent use, must return quickly without blocking, and must not
//     call the engine. One Observer may serve many engines.
//   - Engines that are not Durable (memory) never call it.
type Observer interface {
	Synced(SyncEvent)
}

// SyncEvent describes one sync round; see Observer.
type SyncEvent struct {
	// Duration is the time the round's I/O took on the engine's clock: the
	// fsyncs, and the writes the round made just before them.
	Duration time.Duration
	// Batches is how many appends the round made durable that no earlier
	// event counted: the group-commit size. At least 1 unless Err is set;
	// with Err, the appends the round was to make durable (maybe none).
	Batches int
	// Bytes is the Data bytes of those appends: what callers gave Append,
	// not what the engine wrote for them (framing, WAL, amplification).
	Bytes int64
	// Err is the round's failure, nil when the round succeeded. The engine
	// returns it (it is sticky) from then on.
	Err error
}

// ObserverFunc adapts a function to the Observer interface.
type ObserverFunc func(SyncEvent)

// Synced calls f(ev).
func (f ObserverFunc) Synced(ev SyncEvent) { f(ev) }
