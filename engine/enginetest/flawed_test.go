package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// flawed wraps the memory engine into a durable engine that exists only to
// test this suite: its log is kept in this process across Close and
// reopen, it claims its directory like every engine, reports its sync
// rounds, reads into lent buffers, and under an injected filesystem fsyncs
// its directory every round so that an injected fsync failure is a failed
// round. With no bug it keeps every promise of the contract; each bug
// breaks one (see bugs), and the suite must then fail the case that
// checks it.
type flawed struct {
	bug string
	mem *memory.Engine
	// opts are what it was opened with; dir is synced through opts.FS
	// every round when that filesystem is injected (custom).
	opts   engine.Options
	dir    string
	custom bool

	mu            sync.Mutex
	closed        bool
	err           error // the sticky failure of a round
	unsynced      int   // appends since the last reported round
	unsyncedBytes int64
	shared        map[int64][]byte // bugReadShares: what Read handed out
	appending     atomic.Bool      // bugReadDuringAppend
}

// Bugs of a flawed engine, each named for what it breaks.
const (
	bugNone              = ""
	bugEndOneShort       = "reports an end offset one short of its last batch"
	bugAnyBase           = "appends a batch whatever its base offset"
	bugReadSkipsPartial  = "reads from the next batch when the offset is inside one"
	bugReadPastEnd       = "reads an empty log outside its range instead of failing"
	bugReadStrictBytes   = "returns no batch when the first is larger than maxBytes"
	bugReadShares        = "hands every reader the same bytes"
	bugReadIntoShort     = "drops the last batch from ReadInto"
	bugForgets           = "forgets its log when reopened"
	bugKeepsLastSegment  = "keeps only the last SegmentBytes of its log across a reopen"
	bugTruncateRoundsUp  = "keeps the whole batch a Truncate lands in"
	bugTruncatePastEnd   = "accepts a Truncate past its end"
	bugDeleteRoundsDown  = "moves its start to the base of the batch holding the new start"
	bugDeleteStopsAtEnd  = "stops a DeleteBefore past its end at the end"
	bugReadDuringAppend  = "fails reads while an append is in progress"
	bugSmallBatchLimit   = "refuses batches over 512 KiB"
	bugIgnoresMaxBytes   = "ignores Options.MaxBatchBytes"
	bugSyncOwnError      = "returns its own error from a Sync whose context ended"
	bugObserverTwice     = "tells its Observer about every round twice"
	bugAppendAfterClose  = "appends after Close"
	bugOpensAnyDirectory = "opens a directory another engine claimed"
)

// bugs is which bug fails which case of the suite.
var bugs = map[string]string{
	"AppendAssignsContiguousOffsets":  bugEndOneShort,
	"AppendRefusesWrongBase":          bugAnyBase,
	"ReadFindsBatchFromAnyOffsetInIt": bugReadSkipsPartial,
	"ReadAtAndPastEnd":                bugReadPastEnd,
	"ReadReturnsAtLeastOneBatch":      bugReadStrictBytes,
	"ReadReturnsCallerOwnedBytes":     bugReadShares,
	"ReadIntoMatchesRead":             bugReadIntoShort,
	"ReopenKeepsSyncedBatches":        bugForgets,
	"ManySegmentsReadAndReopen":       bugKeepsLastSegment,
	"TruncateThenAppend":              bugTruncateRoundsUp,
	"TruncateOutOfRange":              bugTruncatePastEnd,
	"DeleteBeforeMovesStart":          bugDeleteRoundsDown,
	"DeleteBeforePastEndRestartsLog":  bugDeleteStopsAtEnd,
	"ConcurrentAppendersAndReaders":   bugReadDuringAppend,
	"OneMiBBatch":                     bugSmallBatchLimit,
	"EmptyAndOversizedBatches":        bugIgnoresMaxBytes,
	"SyncHonoursContext":              bugSyncOwnError,
	"ObserverSeesEverySyncRound":      bugObserverTwice,
	"EveryCallAfterClose":             bugAppendAfterClose,
	"DirectoryOfAnotherEngine":        bugOpensAnyDirectory,
}

// kept holds the flawed engines' logs by directory across Close, as a disk
// would.
var kept = struct {
	sync.Mutex
	logs map[place]*memory.Engine
}{logs: map[place]*memory.Engine{}}

// place is a directory on a filesystem.
type place struct {
	fs  vfs.FS
	dir string
}

func flawedDriver(bug string) engine.Driver {
	d := engine.Driver{
		Name: "flawed",
		Caps: engine.Capabilities{CustomFS: true, Durable: true, SharedCommit: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) { return openFlawed(dir, opts, bug) },
	}
	d.OpenStore = func(dir string, opts engine.Options) (engine.Store, error) { return openFlawedStore(d, dir, opts, bug) }
	return d
}

func openFlawed(dir string, opts engine.Options, bug string) (*flawed, error) {
	segmentBytes := opts.SegmentBytes
	if bug == bugIgnoresMaxBytes {
		opts.MaxBatchBytes = 0
	}
	custom := opts.CustomFS()
	opts = opts.WithDefaults()
	if bug != bugOpensAnyDirectory {
		if err := engine.ClaimDir(opts.FS, dir, "flawed"); err != nil {
			return nil, err
		}
	}
	key := place{opts.FS, dir}
	kept.Lock()
	defer kept.Unlock()
	mem := kept.logs[key]
	if mem == nil || bug == bugForgets {
		mem = memory.Open(opts)
		kept.logs[key] = mem
	}
	e := &flawed{bug: bug, mem: mem, opts: opts, dir: dir, custom: custom}
	if bug == bugKeepsLastSegment && segmentBytes > 0 {
		if err := e.keepLast(int64(segmentBytes)); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// keepLast drops every batch but those in the last n bytes of the log.
func (e *flawed) keepLast(n int64) error {
	bs, err := e.mem.Read(e.mem.StartOffset(), 1<<62)
	if err != nil {
		return err
	}
	var size int64
	for i := len(bs) - 1; i >= 0; i-- {
		if size += int64(len(bs[i].Data)); size > n {
			return e.mem.DeleteBefore(bs[i].NextOffset())
		}
	}
	return nil
}

func (e *flawed) check() error {
	switch {
	case e.closed:
		return engine.ErrClosed
	case e.err != nil:
		return e.err
	}
	return nil
}

func (e *flawed) Append(b engine.Batch) error {
	if e.bug == bugReadDuringAppend {
		e.appending.Store(true)
		defer e.appending.Store(false)
		// Widen the window the bug lives in, before the lock that would
		// keep readers out, so that concurrent readers meet it; a correct
		// engine has no such window.
		time.Sleep(200 * time.Microsecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(); err != nil && (e.bug != bugAppendAfterClose || !e.closed) {
		return err
	}
	switch e.bug {
	case bugAnyBase:
		b.BaseOffset = e.mem.EndOffset()
	case bugSmallBatchLimit:
		if len(b.Data) > 512<<10 {
			return engine.ErrBatchTooLarge
		}
	}
	if err := e.mem.Append(b); err != nil {
		return err
	}
	e.unsynced++
	e.unsyncedBytes += int64(len(b.Data))
	return nil
}

func (e *flawed) Sync(ctx context.Context, end int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		if e.bug == bugSyncOwnError {
			return errors.New("flawed: sync abandoned")
		}
		return ctx.Err()
	}
	return e.round()
}

// round makes the appends so far durable and reports them; the caller
// holds mu.
func (e *flawed) round() error {
	start := time.Now()
	if e.custom {
		if err := engine.SyncDir(e.opts.FS, e.dir); err != nil {
			e.err = fmt.Errorf("flawed: %w", err)
			e.report(engine.SyncEvent{Duration: time.Since(start), Batches: e.unsynced, Bytes: e.unsyncedBytes, Err: e.err})
			return e.err
		}
	}
	if e.unsynced > 0 {
		e.report(engine.SyncEvent{Duration: max(time.Since(start), time.Nanosecond), Batches: e.unsynced, Bytes: e.unsyncedBytes})
	}
	e.unsynced, e.unsyncedBytes = 0, 0
	return nil
}

func (e *flawed) report(ev engine.SyncEvent) {
	if e.opts.Observer == nil {
		return
	}
	e.opts.Observer.Synced(ev)
	if e.bug == bugObserverTwice {
		e.opts.Observer.Synced(ev)
	}
}

func (e *flawed) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	if e.appending.Load() {
		return nil, errors.New("flawed: busy appending")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.bug == bugReadPastEnd && (offset < e.mem.StartOffset() || offset > e.mem.EndOffset()) {
		return nil, nil
	}
	bs, err := e.mem.Read(offset, maxBytes)
	if err != nil || len(bs) == 0 {
		return bs, err
	}
	switch e.bug {
	case bugReadSkipsPartial:
		if bs[0].BaseOffset < offset {
			return e.mem.Read(bs[0].NextOffset(), maxBytes)
		}
	case bugReadStrictBytes:
		if len(bs[0].Data) > maxBytes {
			return nil, nil
		}
	case bugReadShares:
		if e.shared == nil {
			e.shared = map[int64][]byte{}
		}
		for i, b := range bs {
			if d, ok := e.shared[b.BaseOffset]; ok {
				bs[i].Data = d
			} else {
				e.shared[b.BaseOffset] = b.Data
			}
		}
	}
	return bs, nil
}

// ReadInto implements engine.BufferReader: Read, copied into buf.
func (e *flawed) ReadInto(buf []byte, offset int64, maxBytes int) ([]engine.Batch, []byte, error) {
	bs, err := e.Read(offset, maxBytes)
	if err != nil {
		return nil, buf, err
	}
	if e.bug == bugReadIntoShort && len(bs) > 1 {
		bs = bs[:len(bs)-1]
	}
	buf = buf[:0]
	for _, b := range bs {
		buf = append(buf, b.Data...)
	}
	off := 0
	for i := range bs {
		n := len(bs[i].Data)
		bs[i].Data = buf[off : off+n : off+n]
		off += n
	}
	return bs, buf, nil
}

func (e *flawed) Truncate(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(); err != nil {
		return err
	}
	switch {
	case e.bug == bugTruncatePastEnd && offset > e.mem.EndOffset():
		return nil
	case e.bug == bugTruncateRoundsUp && offset < e.mem.EndOffset():
		if bs, err := e.mem.Read(offset, 0); err == nil && len(bs) > 0 {
			offset = bs[0].NextOffset()
		}
	}
	return e.mem.Truncate(offset)
}

func (e *flawed) DeleteBefore(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(); err != nil {
		return err
	}
	switch {
	case e.bug == bugDeleteStopsAtEnd && offset > e.mem.EndOffset():
		offset = e.mem.EndOffset()
	case e.bug == bugDeleteRoundsDown && offset < e.mem.EndOffset():
		if bs, err := e.mem.Read(offset, 0); err == nil && len(bs) > 0 {
			offset = bs[0].BaseOffset
		}
	}
	return e.mem.DeleteBefore(offset)
}

func (e *flawed) StartOffset() int64 { return e.mem.StartOffset() }

func (e *flawed) EndOffset() int64 {
	end := e.mem.EndOffset()
	if e.bug == bugEndOneShort && end > 0 {
		return end - 1
	}
	return end
}

// Close reports what is left unsynced and keeps the log for a reopen.
func (e *flawed) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	if e.err != nil {
		return e.err
	}
	return e.round()
}

var (
	_ engine.LogEngine    = (*flawed)(nil)
	_ engine.BufferReader = (*flawed)(nil)
)
