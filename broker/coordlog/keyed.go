package coordlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/clock"
)

// Compaction of a coordinator's log: the latest record of each key wins
// and a nil value is a tombstone, as in Kafka's compacted internal topics.
//
// Every record the coordinator appends goes through Keyed.Append, under
// Keyed's lock, which also keeps live: for every key of the log, the value
// replay would end up with (keys whose latest record is a tombstone are
// absent). So live is, at any instant, exactly what a replay of the log up
// to its end yields, key by key. (Records written inside a transaction
// reach live only at its commit: SetLive.)
//
// A compaction copies live to the log end and then moves the log start to
// where the copy began:
//
//  1. Under the lock, take the live keys and C, the log end (or the first
//     pinned offset, if lower: see Pin). Then copy: batches of about
//     copyBatchBytes, each built under the lock from the live values of
//     that moment (keys tombstoned since are skipped) and appended before
//     the lock is released; other appends may come before and between the
//     copy batches, all at or after C.
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
// records survive. Appends while a compaction runs are ordinary appends at
// or after C: kept, in their log order.

// Defaults for KeyedConfig's compaction fields.
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

// ErrClosing stops a compaction when its coordinator closes.
var ErrClosing = errors.New("coordinator closing")

// KeyedConfig configures a Keyed log. Zero CompactRatio and
// CompactMinBytes take the defaults; a negative CompactMinBytes turns
// compaction off.
type KeyedConfig struct {
	Log             Log
	Clock           clock.Clock
	Logger          *slog.Logger
	Name            string // the topic, for the log
	CompactRatio    int
	CompactMinBytes int64
}

// Loaded is what a coordinator's replay found of its log.
type Loaded struct {
	// Live is the latest value of every key whose latest record is not a
	// tombstone, under the key as the coordinator writes it.
	Live       map[string][]byte
	Start, End int64 // the log's start and end offsets
	Bytes      int64 // batch bytes between them
}

// Keyed is a coordinator's compacted log: its appends, the live value of
// every key, and the compactions that keep the log within about
// CompactRatio times its live set. Safe for concurrent use.
type Keyed struct {
	cfg KeyedConfig
	// compactCtx ends when Close begins: a compaction's waits stop (it
	// then deletes nothing, which is always safe).
	compactCtx  context.Context
	stopCompact context.CancelFunc

	mu    sync.Mutex // orders every append of the coordinator
	live  map[string][]byte
	pins  map[int64]int64
	start int64 // log start, as the coordinator last moved or read it
	end   int64 // log end after the coordinator's latest append
	bytes int64 // batch bytes between start and end

	closed      bool // Close began: no new compaction
	compacting  bool // a compaction runs; idle is closed when it ends
	idle        chan struct{}
	retryBytes  int64 // after a failed compaction: the size to reach before the next
	compactions int
	// hook, if set (by tests, before any compaction), runs in every
	// compaction between taking the live keys and copying them.
	hook func()
}

// NewKeyed is the compacted log over cfg.Log, as replay found it.
func NewKeyed(cfg KeyedConfig, found Loaded) *Keyed {
	if cfg.CompactRatio <= 0 {
		cfg.CompactRatio = DefaultCompactRatio
	}
	if cfg.CompactMinBytes == 0 {
		cfg.CompactMinBytes = DefaultCompactMinBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if found.Live == nil {
		found.Live = map[string][]byte{}
	}
	k := &Keyed{cfg: cfg, live: found.Live, pins: map[int64]int64{}, start: found.Start, end: found.End, bytes: found.Bytes}
	k.compactCtx, k.stopCompact = context.WithCancel(context.Background())
	k.mu.Lock()
	k.maybeCompact() // a log left large by an earlier run
	k.mu.Unlock()
	return k
}

// Close stops compacting: one under way stops at its next batch or wait,
// and Close returns once it has.
func (k *Keyed) Close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.stopCompact()
	k.WaitIdle()
}

// Stats describes the log as the coordinator sees it.
type Stats struct {
	StartOffset int64
	EndOffset   int64
	// Bytes are the stored batch bytes between StartOffset and EndOffset.
	Bytes int64
	// LiveKeys are the keys whose latest record is not a tombstone: the
	// records a compaction copies.
	LiveKeys int
	// Compactions counts the compactions completed since the log was
	// loaded.
	Compactions int
	Compacting  bool
}

// Stats returns the log's state.
func (k *Keyed) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return Stats{
		StartOffset: k.start, EndOffset: k.end, Bytes: k.bytes,
		LiveKeys: len(k.live), Compactions: k.compactions, Compacting: k.compacting,
	}
}

// Append writes recs as one batch at the log end, in the caller's order,
// keeps live in step with it, and starts a compaction in the background if
// the log has grown enough. It returns the offset just past the batch, as
// Log.Append.
func (k *Keyed) Append(recs []batch.KV, now time.Time) (int64, error) {
	b := batch.Encode(recs, now)
	k.mu.Lock()
	defer k.mu.Unlock()
	end, err := k.cfg.Log.Append(b)
	if err != nil {
		return 0, err
	}
	k.end = end
	k.bytes += int64(len(b))
	k.setLiveLocked(recs)
	k.maybeCompact()
	return end, nil
}

// AppendPinned appends a batch built elsewhere whose records are not live
// yet (a transaction's: SetLive makes them live at its commit), and pins
// the log from its first offset under id until Unpin, so that no
// compaction drops it meanwhile. It returns the offset just past it.
func (k *Keyed) AppendPinned(id int64, b []byte, records int) (int64, error) {
	return k.appendOther(b, func(end int64) {
		if _, ok := k.pins[id]; !ok {
			k.pins[id] = end - int64(records)
		}
	})
}

// AppendOther appends through appendFn what only the log writes (a
// transaction marker), in order with the coordinator's appends, and
// removes pin id: what it held is decided. It returns the offset just past
// it.
func (k *Keyed) AppendOther(id int64, appendFn func() (int64, error)) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	end, err := appendFn()
	if err != nil {
		return 0, err
	}
	k.end = end
	delete(k.pins, id)
	return end, nil
}

func (k *Keyed) appendOther(b []byte, after func(end int64)) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	end, err := k.cfg.Log.Append(b)
	if err != nil {
		return 0, err
	}
	k.end = end
	k.bytes += int64(len(b))
	after(end)
	return end, nil
}

// Pin holds the log from offset off on under id (replay found a
// transaction undecided there).
func (k *Keyed) Pin(id, off int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pins[id] = off
}

// SetLive makes kvs live values, as records appended earlier (pinned) and
// now committed.
func (k *Keyed) SetLive(kvs []batch.KV) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setLiveLocked(kvs)
}

// setLiveLocked keeps live in step with records kvs; k.mu is held.
func (k *Keyed) setLiveLocked(kvs []batch.KV) {
	for _, r := range kvs {
		if r.Value == nil {
			delete(k.live, string(r.Key))
		} else {
			k.live[string(r.Key)] = r.Value
		}
	}
}

// maybeCompact starts a background compaction when the log holds
// CompactRatio records per live key and at least CompactMinBytes (and, after
// a failure, has grown by CompactMinBytes since). k.mu is held.
func (k *Keyed) maybeCompact() {
	if k.closed || k.compacting || k.cfg.CompactMinBytes < 0 {
		return
	}
	if k.bytes < max(k.cfg.CompactMinBytes, k.retryBytes) ||
		k.end-k.start < int64(k.cfg.CompactRatio)*int64(max(len(k.live), 1)) {
		return
	}
	k.compacting, k.idle = true, make(chan struct{})
	go func() {
		err := k.compact()
		k.compacted(err)
	}()
}

// Compact runs a compaction now, whatever the thresholds, after the one
// under way if any, and returns its outcome (an error once Close began).
// Compactions start by themselves (see KeyedConfig); this is for tests and
// tools.
func (k *Keyed) Compact(ctx context.Context) error {
	for {
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return ErrClosing
		}
		if !k.compacting {
			k.compacting, k.idle = true, make(chan struct{})
			k.mu.Unlock()
			break
		}
		idle := k.idle
		k.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := k.compact()
	k.compacted(err)
	return err
}

// compacted ends a compaction: it lets waiters go and, if the log grew
// enough meanwhile, starts the next.
func (k *Keyed) compacted(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.compacting = false
	close(k.idle)
	if err != nil {
		if !errors.Is(err, ErrClosing) && !errors.Is(err, context.Canceled) {
			k.cfg.Logger.Warn(k.cfg.Name+": compaction failed", "err", err)
		}
		k.retryBytes = k.bytes + max(k.cfg.CompactMinBytes, 0)
		return
	}
	k.retryBytes = 0
	k.compactions++
	k.maybeCompact()
}

// WaitIdle returns once no compaction runs (one that ends may start the
// next, unless Close began).
func (k *Keyed) WaitIdle() {
	for {
		k.mu.Lock()
		idle, running := k.idle, k.compacting
		k.mu.Unlock()
		if !running {
			return
		}
		<-idle
	}
}

// SetHook makes every later compaction call f between taking the live
// keys and copying them: where appends race with it (tests).
func (k *Keyed) SetHook(f func()) { k.hook = f }

// compact copies the live records to the log end, waits until the copy is
// durable and moves the log start to where the copy began (see the comment
// at the top of this file for why that is safe).
func (k *Keyed) compact() error {
	k.mu.Lock()
	keys := make([]string, 0, len(k.live))
	for key := range k.live {
		keys = append(keys, key)
	}
	// The new log start, taken with the keys: every key written below it is
	// in keys or was tombstoned by then, and nothing pinned lies below it.
	first, firstBytes, copyEnd := k.end, k.bytes, k.end
	for _, off := range k.pins {
		first = min(first, off)
	}
	if first < k.end {
		// What lies between the pin and the end stays: a share of the
		// bytes, by offsets (an estimate; the log's records are of a size).
		firstBytes = k.bytes * (first - k.start) / max(k.end-k.start, 1)
	}
	k.mu.Unlock()
	if k.hook != nil {
		k.hook()
	}
	slices.Sort(keys) // keys of one group or id end up together
	started := k.cfg.Clock.Now()
	for i := 0; i < len(keys); {
		var err error
		if i, copyEnd, err = k.appendCopy(keys, i, copyEnd); err != nil {
			return fmt.Errorf("copy live records: %w", err)
		}
	}
	if err := k.cfg.Log.WaitDurable(k.compactCtx, copyEnd); err != nil {
		return fmt.Errorf("wait for the copy (to %d): %w", copyEnd, err)
	}
	if err := k.cfg.Log.DeleteBefore(k.compactCtx, first); err != nil {
		return fmt.Errorf("delete before %d: %w", first, err)
	}
	k.mu.Lock()
	dropped := first - k.start
	k.start = first
	k.bytes -= firstBytes
	live, size := len(k.live), k.bytes
	k.mu.Unlock()
	k.cfg.Logger.Info(k.cfg.Name+" compacted", "start", first, "dropped_offsets", dropped,
		"live_keys", live, "bytes", size, "took", k.cfg.Clock.Now().Sub(started))
	return nil
}

// appendCopy appends one copy batch: the live values of keys[i:], as they
// are now, up to copyBatchBytes. It returns the next key to copy and the log
// end after the batch (end if it appended nothing).
func (k *Keyed) appendCopy(keys []string, i int, end int64) (int, int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return i, 0, ErrClosing
	}
	var recs []batch.KV
	size := 0
	for ; i < len(keys); i++ {
		v, ok := k.live[keys[i]]
		if !ok {
			continue // tombstoned since the copy began, at or after its start
		}
		n := len(keys[i]) + len(v)
		if len(recs) > 0 && size+n > copyBatchBytes {
			break
		}
		recs = append(recs, batch.KV{Key: []byte(keys[i]), Value: v})
		size += n
	}
	if len(recs) == 0 {
		return i, end, nil
	}
	b := batch.Encode(recs, k.cfg.Clock.Now())
	end, err := k.cfg.Log.Append(b)
	if err != nil {
		return i, 0, err
	}
	k.end = end
	k.bytes += int64(len(b))
	return i, end, nil
}
