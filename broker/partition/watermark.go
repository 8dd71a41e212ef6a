package partition

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// watermark holds the high watermark and wakes whoever waits on it. Every
// change closes the current channel and makes a new one, so any number of
// waiters (producers with acks=all, long-polling fetches) wake on one close.
type watermark struct {
	mu  sync.Mutex
	hw  int64
	ch  chan struct{}
	err error // sticky: the partition failed or closed; no further advance
	// watchers get a value (without blocking) at every change, as ch's
	// waiters wake: a waiter on many watermarks at once registers one
	// channel with each instead of a goroutine per watermark.
	watchers map[chan<- struct{}]struct{}
}

// renew wakes every waiter and watcher after a change; the caller holds mu.
func (w *watermark) renew() {
	close(w.ch)
	w.ch = make(chan struct{})
	for c := range w.watchers {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// watch makes c get a value at every change until the returned func is
// called. c should be buffered: a change is dropped while it holds one.
func (w *watermark) watch(c chan<- struct{}) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watchers == nil {
		w.watchers = map[chan<- struct{}]struct{}{}
	}
	w.watchers[c] = struct{}{}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.watchers, c)
	}
}

func (w *watermark) init(hw int64) {
	w.hw, w.ch = hw, make(chan struct{})
}

func (w *watermark) get() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hw
}

// advance moves the HW up to to; it never moves back.
func (w *watermark) advance(to int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if to <= w.hw || w.err != nil {
		return
	}
	w.hw = to
	w.renew()
}

// set moves the value to v, up or down, waking every waiter if it changed:
// for a value that is not a high watermark (Partition.starts).
func (w *watermark) set(v int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v == w.hw || w.err != nil {
		return
	}
	w.hw = v
	w.renew()
}

// poke wakes every waiter without a change of value, so that they check
// their other conditions (the ISR, the role).
func (w *watermark) poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.renew()
}

// lower moves the HW down to to: a follower truncated below it (see
// truncateLocked). Nothing else moves a high watermark back.
func (w *watermark) lower(to int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if to < w.hw {
		w.hw = to
	}
}

// close makes every current and future wait that is not yet satisfied
// return err.
func (w *watermark) close(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.err = err
	w.renew()
}

// failed returns the sticky error once the watermark was closed.
func (w *watermark) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// changed returns a channel closed at the next change (advance or close).
func (w *watermark) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// wait returns nil once ok(hw) holds, the sticky error if the watermark was
// closed first, or ctx.Err().
func (w *watermark) wait(ctx context.Context, ok func(hw int64) bool) error {
	for {
		w.mu.Lock()
		hw, ch, err := w.hw, w.ch, w.err
		w.mu.Unlock()
		if ok(hw) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitDurable (acks=1) returns once every batch below end is durable under
// the engine's sync policy (engine.LogEngine.Sync: under SyncInterval and
// SyncNever, safe from a crash of this process). It returns ctx.Err() if
// ctx ends first and kerr.KafkaStorageError if the sync failed.
//
// It waits for the background loop, which syncs after every append anyway:
// a Sync of its own would often land in the next group-commit round and
// cost a second sync per batch.
func (p *Partition) WaitDurable(ctx context.Context, end int64) error {
	// Sync treats an end past the log end as the log end, so only offsets
	// below both are known durable afterwards.
	end = min(end, p.log.EndOffset())
	if err := p.durable.failed(); err != nil {
		return err
	}
	return p.durable.wait(ctx, func(d int64) bool { return d >= end })
}

// WaitHighWatermark (acks=all) returns once the high watermark reaches end,
// ctx.Err() if ctx ends first, kerr.KafkaStorageError if the partition's log
// failed, kerr.NotLeaderForPartition if the partition was closed or this
// broker's leadership ended, or kerr.NotEnoughReplicasAfterAppend once the
// ISR the batch counts on shrank below min.insync.replicas.
func (p *Partition) WaitHighWatermark(ctx context.Context, end int64) error {
	w := p.AwaitAck(-1, end)
	if w.tenure == nil {
		_, err := w.Poll()
		return err
	}
	var after error
	err := p.wm.wait(ctx, func(hw int64) bool {
		done, e := w.hwReached(hw)
		after = e
		return done
	})
	if err != nil {
		return err
	}
	return after
}

// AckWait is one produce's wait for its acknowledgement, for a caller that
// cannot block (a Manual manager's: the simulator polls after each event).
// Take it right after the Append, under the leadership the batch was
// appended in.
type AckWait struct {
	p      *Partition
	acks   int16
	end    int64
	tenure *tenure // that leadership; nil: none
}

// AwaitAck starts the wait of a produce whose batches end before end, with
// acks 1 (durable here) or -1 (below the high watermark).
func (p *Partition) AwaitAck(acks int16, end int64) AckWait {
	p.mu.Lock()
	defer p.mu.Unlock()
	return AckWait{p: p, acks: acks, end: end, tenure: p.tenure}
}

// Poll reports, without blocking, whether the wait is over, and then with
// what WaitDurable (acks=1) or WaitHighWatermark (acks=-1) returns.
func (w AckWait) Poll() (done bool, err error) {
	p := w.p
	if w.acks != -1 {
		if err := p.durable.failed(); err != nil {
			return true, err
		}
		return p.durable.get() >= min(w.end, p.log.EndOffset()), nil
	}
	if w.tenure == nil {
		if p.wm.get() >= w.end {
			return true, nil
		}
		return true, p.wrap(fmt.Errorf("not the leader: %w", kerr.NotLeaderForPartition))
	}
	if done, err := w.hwReached(p.wm.get()); done {
		return true, err
	}
	if err := p.wm.failed(); err != nil {
		return true, err
	}
	return false, nil
}

// hwReached is the acks=all condition at high watermark hw. Once the
// leadership has ended, only the high watermark it reached counts: a later
// leadership's may pass offsets that this replica truncated and fetched
// again in between, holding other records.
func (w AckWait) hwReached(hw int64) (bool, error) {
	select {
	case <-w.tenure.gone:
		if w.tenure.endHW >= w.end {
			return true, nil
		}
		return true, w.p.wrap(fmt.Errorf("leadership lost while waiting: %w", kerr.NotLeaderForPartition))
	default:
	}
	if hw >= w.end {
		return true, nil
	}
	if e := w.p.afterAppendCheck(); e != nil {
		return true, w.p.wrap(e)
	}
	return false, nil
}

// WaitForData (Fetch long polling) returns once the high watermark is past
// offset, that is once a consumer at offset has something to read; ctx.Err()
// if ctx ends first; the partition's error if it failed or closed.
func (p *Partition) WaitForData(ctx context.Context, offset int64) error {
	return p.wm.wait(ctx, func(hw int64) bool { return hw > offset })
}

// Changed returns a channel that is closed at the next high watermark change
// (or when the partition fails or closes), for a fetch that waits on many
// partitions at once: read HighWatermark after taking the channel.
func (p *Partition) Changed() <-chan struct{} { return p.wm.changed() }

// loop is the partition's background goroutine. It moves the HW: after
// appends it syncs the log (under SyncAlways one fsync shared with acks=1
// waiters by the engine's group commit; under the others a wait until the
// engine has handed the batches to the OS) and advances the HW to what is
// then durable. It also writes producer snapshots.
func (p *Partition) loop() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		}
		if !p.syncOnce(ctx) {
			return
		}
	}
}

// syncOnce is one round of the background loop: sync the log and report
// what is durable; then write a new partition's first leader epoch
// checkpoint, and a producer snapshot if one is due. It reports false once
// the partition failed or is closing.
func (p *Partition) syncOnce(ctx context.Context) bool {
	end := p.log.EndOffset()
	if err := p.log.Sync(ctx, end); err != nil {
		if ctx.Err() != nil {
			return false
		}
		err = p.writeFailed("sync", err)
		p.logger.Error("log sync failed; the partition stops accepting writes", "err", err)
		p.durable.close(err)
		p.wm.close(err)
		return false
	}
	p.mu.Lock()
	p.localDurable(end)
	p.mu.Unlock()
	p.saveFirstEpochs()
	p.maybeSnapshot(ctx)
	return true
}

// Sync does, now and on the caller's goroutine, what the background loop
// does after appends: for a Manager opened with Config.Manual, whose
// partitions have no loop (the simulator decides when a sync completes).
// It reports false once the partition failed.
func (p *Partition) Sync() bool {
	if p.gone.Load() {
		return false
	}
	return p.syncOnce(context.Background())
}

// SyncWanted reports whether the partition asked for a Sync since the last
// call: what wakes the background loop (appends, a producer snapshot
// due). For a Manager opened with Config.Manual, whose
// caller schedules the Sync.
func (p *Partition) SyncWanted() bool {
	select {
	case <-p.kick:
		return true
	default:
		return false
	}
}
