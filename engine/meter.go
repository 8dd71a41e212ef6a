package engine

import (
	"sync"
	"time"

	"github.com/minikafka/minikafka/clock"
)

// SyncMeter is the bookkeeping a durable engine needs to keep the Observer
// contract: it counts appends as they are made and, for each sync round,
// reports the appends the round covers that no earlier event counted.
//
// The engine calls Appended for each append, at the point where the append
// becomes part of what the next round will cover (under the lock its rounds
// take their snapshot with, or before the write its round will sync). A round
// calls Begin when it takes that snapshot, before its I/O, and End with the
// I/O's error once done, before it releases its Sync waiters. Rounds may
// overlap: a round that ends after a later one has reported its appends
// reports nothing more (unless it failed).
//
// A nil *SyncMeter (NewSyncMeter of options without an Observer) does
// nothing, so an engine calls it unconditionally and pays one nil check per
// call when nobody observes.
type SyncMeter struct {
	obs   Observer
	clock clock.Clock

	mu       sync.Mutex
	appended tally // every append counted, less those dropped unsynced
	reported tally // the appends events have counted
}

// tally counts appends and their Data bytes.
type tally struct {
	batches int64
	bytes   int64
}

// NewSyncMeter returns the meter for an engine opened with opts, or nil when
// opts has no Observer. Durations are read on opts.Clock (clock.Real when
// nil).
func NewSyncMeter(opts Options) *SyncMeter {
	if opts.Observer == nil {
		return nil
	}
	c := opts.Clock
	if c == nil {
		c = clock.Real
	}
	return &SyncMeter{obs: opts.Observer, clock: c}
}

// Appended counts one append of dataBytes bytes of Data.
func (m *SyncMeter) Appended(dataBytes int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.appended.batches++
	m.appended.bytes += int64(dataBytes)
	m.mu.Unlock()
}

// Dropped uncounts appends that left the log before any round covered them
// (a Truncate of batches not yet synced). The caller makes sure no round is
// in progress (it holds what excludes them) and that no event counted them.
func (m *SyncMeter) Dropped(batches int, dataBytes int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.appended.batches = max(m.appended.batches-int64(batches), m.reported.batches)
	m.appended.bytes = max(m.appended.bytes-dataBytes, m.reported.bytes)
	m.mu.Unlock()
}

// Forget uncounts every append no event has counted yet: they all left the
// log unsynced (a Truncate that emptied it). The caller makes sure no round
// is in progress.
func (m *SyncMeter) Forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.appended = m.reported
	m.mu.Unlock()
}

// SyncRound is one sync round in progress: what it covers and when it began.
type SyncRound struct {
	m     *SyncMeter
	start time.Time
	upto  tally
}

// Begin starts a round that covers every append counted so far.
func (m *SyncMeter) Begin() SyncRound {
	if m == nil {
		return SyncRound{}
	}
	m.mu.Lock()
	upto := m.appended
	m.mu.Unlock()
	return SyncRound{m: m, start: m.clock.Now(), upto: upto}
}

// End reports the round to the Observer, err being its I/O's failure. A round
// that succeeded and covered nothing new is not reported.
func (r SyncRound) End(err error) {
	m := r.m
	if m == nil {
		return
	}
	d := max(m.clock.Now().Sub(r.start), 0)
	var covered tally
	m.mu.Lock()
	if r.upto.batches > m.reported.batches {
		covered = tally{batches: r.upto.batches - m.reported.batches, bytes: r.upto.bytes - m.reported.bytes}
		m.reported = r.upto
	}
	m.mu.Unlock()
	if covered.batches == 0 && err == nil {
		return
	}
	m.obs.Synced(SyncEvent{Duration: d, Batches: int(covered.batches), Bytes: covered.bytes, Err: err})
}
