package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Compaction of __consumer_offsets.
//
// Every record the coordinator appends goes through Coordinator.append,
// under logState.mu, which also keeps live: for every key of the log, the
// value replay would end up with (keys whose latest record is a tombstone
// are absent). So live is, at any instant, exactly what a replay of the
// log up to its end yields, key by key.
//
// A compaction copies live to the log end and then moves the log start to
// where the copy began:
//
//  1. Under logState.mu, take the live keys and C, the log end. Then copy:
//     batches of about copyBatchBytes, each built under logState.mu from
//     the live values of that moment (keys tombstoned since are skipped)
//     and appended before the lock is released; other appends may come
//     before and between the copy batches, all at or after C.
//  2. WaitDurable through the end of the last copy batch.
//  3. Log.DeleteBefore(C).
//
// Why replay sees the same state. A copy record of K restates the value K
// has at that point of the log, so replaying it changes nothing (latest
// wins). Before step 3 the log is the old log with records appended: a
// crash anywhere in steps 1 and 2 (a partial copy, an undurable one) leaves
// a log whose replay is the state without compaction. After step 3, take a
// key K and its records other than copies. If one of them lies at or after
// C, the latest of them is kept and decides K's value as before. Otherwise
// K's value did not change from C on: if it was a value v, K was among the
// keys taken and its copy K=v lies at or after C; if K was deleted, it was
// not copied and none of its records is left. Absent or v, as before. Step
// 2 makes every record below the copy's end durable before anything is
// deleted, so a crash cannot leave the copy's start missing while later
// records survive. Commits appended while a compaction runs are ordinary
// appends at or after C: kept, in their log order.

// Defaults for Config's compaction fields.
const (
	// DefaultCompactRatio: compact once the log holds this many records per
	// live key (with Kafka's min.cleanable.dirty.ratio of 0.5 the log grows
	// to about twice the live set; a larger ratio rewrites less often).
	DefaultCompactRatio = 4
	// DefaultCompactMinBytes: never compact a log smaller than this.
	// Replaying 16 MiB on startup takes a fraction of a second; compacting
	// below that would rewrite the live set for little gain.
	DefaultCompactMinBytes = 16 << 20
)

// copyBatchBytes bounds the keys and values of one copy batch (a record
// that was stored alone always fits: it goes alone if it must).
const copyBatchBytes = 256 << 10

// errClosing stops a compaction when the coordinator closes.
var errClosing = errors.New("group: coordinator closing")

// logState is the coordinator's knowledge of __consumer_offsets: where it
// starts and ends, its size, the live value of every key, and the
// compaction under way.
type logState struct {
	mu   sync.Mutex // orders every append of the coordinator
	live map[string][]byte
	// txnFirst is the offset of each producer's first batch of offsets in
	// its undecided transaction: compaction never moves the log start past
	// one, or replay would find the marker without the offsets.
	txnFirst map[int64]int64
	start    int64 // log start, as the coordinator last moved or read it
	end      int64 // log end after the coordinator's latest append
	bytes    int64 // batch bytes between start and end

	closed      bool // Close began: no new compaction
	compacting  bool // a compaction runs; idle is closed when it ends
	idle        chan struct{}
	retryBytes  int64 // after a failed compaction: the size to reach before the next
	compactions int
}

// LogStats describes __consumer_offsets as the coordinator sees it.
type LogStats struct {
	StartOffset int64
	EndOffset   int64
	// Bytes are the stored batch bytes between StartOffset and EndOffset.
	Bytes int64
	// LiveKeys are the keys (group metadata, committed offsets) whose latest
	// record is not a tombstone: the records a compaction copies.
	LiveKeys int
	// Compactions counts the compactions completed since Open.
	Compactions int
	Compacting  bool
}

// LogStats returns the state of __consumer_offsets.
func (c *Coordinator) LogStats() LogStats {
	l := &c.lg
	l.mu.Lock()
	defer l.mu.Unlock()
	return LogStats{
		StartOffset: l.start, EndOffset: l.end, Bytes: l.bytes,
		LiveKeys: len(l.live), Compactions: l.compactions, Compacting: l.compacting,
	}
}

// append writes recs as one batch at the log end, in the caller's order,
// keeps live in step with it, and starts a compaction in the background if
// the log has grown enough. It returns the offset just past the batch, as
// Log.Append.
func (c *Coordinator) append(recs []Record, now time.Time) (int64, error) {
	batch := encodeBatch(recs, now)
	l := &c.lg
	l.mu.Lock()
	defer l.mu.Unlock()
	end, err := c.cfg.Log.Append(batch)
	if err != nil {
		return 0, err
	}
	l.end = end
	l.bytes += int64(len(batch))
	for _, r := range recs {
		if r.Value == nil {
			delete(l.live, string(r.Key))
		} else {
			l.live[string(r.Key)] = r.Value
		}
	}
	c.maybeCompact()
	return end, nil
}

// maybeCompact starts a background compaction when the log holds
// CompactRatio records per live key and at least CompactMinBytes (and, after
// a failure, has grown by CompactMinBytes since). l.mu is held.
func (c *Coordinator) maybeCompact() {
	l := &c.lg
	if l.closed || l.compacting || c.cfg.CompactMinBytes < 0 {
		return
	}
	if l.bytes < max(c.cfg.CompactMinBytes, l.retryBytes) ||
		l.end-l.start < int64(c.cfg.CompactRatio)*int64(max(len(l.live), 1)) {
		return
	}
	l.compacting, l.idle = true, make(chan struct{})
	go func() {
		err := c.compact()
		c.compacted(err)
	}()
}

// Compact runs a compaction now, whatever the thresholds, after the one
// under way if any, and returns its outcome (an error once Close began).
// Compactions start by themselves (see Config); this is for tests and
// tools.
func (c *Coordinator) Compact(ctx context.Context) error {
	l := &c.lg
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return errClosing
		}
		if !l.compacting {
			l.compacting, l.idle = true, make(chan struct{})
			l.mu.Unlock()
			break
		}
		idle := l.idle
		l.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := c.compact()
	c.compacted(err)
	return err
}

// compacted ends a compaction: it lets waiters go and, if the log grew
// enough meanwhile, starts the next.
func (c *Coordinator) compacted(err error) {
	l := &c.lg
	l.mu.Lock()
	defer l.mu.Unlock()
	l.compacting = false
	close(l.idle)
	if err != nil {
		if !errors.Is(err, errClosing) && !errors.Is(err, context.Canceled) {
			c.cfg.Logger.Warn("__consumer_offsets: compaction failed", "err", err)
		}
		l.retryBytes = l.bytes + max(c.cfg.CompactMinBytes, 0)
		return
	}
	l.retryBytes = 0
	l.compactions++
	c.maybeCompact()
}

// waitCompaction returns once no compaction runs (one that ends may start
// the next); Close calls it after setting l.closed, so none starts
// afterwards.
func (c *Coordinator) waitCompaction() {
	l := &c.lg
	for {
		l.mu.Lock()
		idle, running := l.idle, l.compacting
		l.mu.Unlock()
		if !running {
			return
		}
		<-idle
	}
}

// compact copies the live records to the log end, waits until the copy is
// durable and moves the log start to where the copy began (see the comment
// at the top of this file for why that is safe).
func (c *Coordinator) compact() error {
	l := &c.lg
	l.mu.Lock()
	keys := make([]string, 0, len(l.live))
	for k := range l.live {
		keys = append(keys, k)
	}
	// The new log start, taken with the keys: every key written below it is
	// in keys or was tombstoned by then, and no undecided transaction's
	// offsets lie below it.
	first, firstBytes, copyEnd := l.end, l.bytes, l.end
	for _, off := range l.txnFirst {
		first = min(first, off)
	}
	l.mu.Unlock()
	if c.compactHook != nil {
		c.compactHook()
	}
	slices.Sort(keys) // a group's metadata and offsets end up together
	started := c.cfg.Clock.Now()
	for i := 0; i < len(keys); {
		var err error
		if i, copyEnd, err = c.appendCopy(keys, i, copyEnd); err != nil {
			return fmt.Errorf("copy live records: %w", err)
		}
	}
	if err := c.cfg.Log.WaitDurable(c.compactCtx, copyEnd); err != nil {
		return fmt.Errorf("wait for the copy (to %d): %w", copyEnd, err)
	}
	if err := c.cfg.Log.DeleteBefore(c.compactCtx, first); err != nil {
		return fmt.Errorf("delete before %d: %w", first, err)
	}
	l.mu.Lock()
	dropped := first - l.start
	l.start = first
	l.bytes -= firstBytes
	live, size := len(l.live), l.bytes
	l.mu.Unlock()
	c.cfg.Logger.Info("__consumer_offsets compacted", "start", first, "dropped_offsets", dropped,
		"live_keys", live, "bytes", size, "took", c.cfg.Clock.Now().Sub(started))
	return nil
}

// appendCopy appends one copy batch: the live values of keys[i:], as they
// are now, up to copyBatchBytes. It returns the next key to copy and the log
// end after the batch (end if it appended nothing).
func (c *Coordinator) appendCopy(keys []string, i int, end int64) (int, int64, error) {
	l := &c.lg
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return i, 0, errClosing
	}
	var recs []Record
	size := 0
	for ; i < len(keys); i++ {
		v, ok := l.live[keys[i]]
		if !ok {
			continue // tombstoned since the copy began, at or after its start
		}
		n := len(keys[i]) + len(v)
		if len(recs) > 0 && size+n > copyBatchBytes {
			break
		}
		recs = append(recs, Record{Key: []byte(keys[i]), Value: v})
		size += n
	}
	if len(recs) == 0 {
		return i, end, nil
	}
	batch := encodeBatch(recs, c.cfg.Clock.Now())
	end, err := c.cfg.Log.Append(batch)
	if err != nil {
		return i, 0, err
	}
	l.end = end
	l.bytes += int64(len(batch))
	return i, end, nil
}
