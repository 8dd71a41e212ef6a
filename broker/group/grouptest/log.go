// Package grouptest provides a group.Log for tests: any engine.LogEngine
// (the memory engine by default) behind the coordinator's log interface,
// with durability that a test can hold back or fail.
package grouptest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// Log stores the coordinator's batches in an engine, patching each batch's
// base offset as the broker's partition layer does. Safe for concurrent use.
type Log struct {
	eng engine.LogEngine

	mu         sync.Mutex // orders appends; guards the fields below
	held       chan struct{}
	durableErr error
	appendErr  error
	deleteErr  error
	appends    int
	deletes    int
}

// NewLog wraps eng.
func NewLog(eng engine.LogEngine) *Log { return &Log{eng: eng} }

// NewMemLog returns a Log over a fresh memory engine.
func NewMemLog() *Log { return NewLog(memory.Open(engine.Options{})) }

// Engine returns the engine underneath.
func (l *Log) Engine() engine.LogEngine { return l.eng }

// Append implements group.Log.
func (l *Log) Append(batch []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.appendErr != nil {
		return 0, l.appendErr
	}
	if len(batch) < 61 {
		return 0, fmt.Errorf("grouptest: batch of %d bytes", len(batch))
	}
	base := l.eng.EndOffset()
	records := int32(binary.BigEndian.Uint32(batch[23:])) + 1 // lastOffsetDelta + 1
	data := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(data, uint64(base))
	if err := l.eng.Append(engine.Batch{BaseOffset: base, Records: records, Data: data}); err != nil {
		return 0, err
	}
	l.appends++
	return base + int64(records), nil
}

// WaitDurable implements group.Log: it waits while durability is held,
// then fails if FailDurable set an error, else syncs the engine.
func (l *Log) WaitDurable(ctx context.Context, end int64) error {
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	err := l.durableErr
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.eng.Sync(ctx, end)
}

// Read implements group.Log.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	batches, err := l.eng.Read(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, b := range batches {
		out = append(out, b.Data...)
	}
	return out, nil
}

// StartOffset implements group.Log.
func (l *Log) StartOffset() int64 { return l.eng.StartOffset() }

// DeleteBefore implements group.Log: it fails if FailDeleteBefore set an
// error, else moves the engine's log start.
func (l *Log) DeleteBefore(_ context.Context, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deleteErr != nil {
		return l.deleteErr
	}
	if err := l.eng.DeleteBefore(offset); err != nil {
		return err
	}
	l.deletes++
	return nil
}

// EndOffset is the engine's end offset.
func (l *Log) EndOffset() int64 { return l.eng.EndOffset() }

// Appends counts successful appends.
func (l *Log) Appends() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appends
}

// Deletes counts successful DeleteBefore calls.
func (l *Log) Deletes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deletes
}

// HoldDurable makes WaitDurable block until ReleaseDurable.
func (l *Log) HoldDurable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = make(chan struct{})
	}
}

// ReleaseDurable lets every held and later WaitDurable go on.
func (l *Log) ReleaseDurable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held != nil {
		close(l.held)
		l.held = nil
	}
}

// ErrInjected is what FailAppends and FailDurable fail with by default.
var ErrInjected = errors.New("grouptest: injected failure")

// FailAppends makes every later Append return err (nil: succeed again).
func (l *Log) FailAppends(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appendErr = err
}

// FailDurable makes every later WaitDurable return err (nil: succeed
// again).
func (l *Log) FailDurable(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.durableErr = err
}

// FailDeleteBefore makes every later DeleteBefore return err without
// moving the log start (nil: succeed again): a compaction stops between
// its durable copy and the deletion, as a crash there would leave it.
func (l *Log) FailDeleteBefore(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleteErr = err
}
