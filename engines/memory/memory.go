// Package memory is the reference engine: the LogEngine contract kept in a
// slice, with nothing written anywhere. It is not durable (a reopen starts
// empty) and exists for tests, the simulator, and as the baseline the other
// engines are measured against.
package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/minikafka/minikafka/engine"
)

// Name is the name the engine registers under.
const Name = "memory"

// Driver is the memory engine as the registry and the suites see it.
var Driver = engine.Driver{
	Name: Name,
	Caps: engine.Capabilities{CustomFS: true},
	Open: func(dir string, opts engine.Options) (engine.LogEngine, error) { return Open(opts), nil },
}

func init() { engine.Register(Driver) }

var _ engine.LogEngine = (*Engine)(nil)

// Engine is an in-memory log.
type Engine struct {
	maxBatchBytes int

	mu      sync.RWMutex
	closed  bool
	batches []engine.Batch // batches[i].BaseOffset ascending and contiguous
	start   int64          // log start offset (may lie inside batches[0])
	end     int64
}

// Open returns an empty in-memory log. The directory and filesystem are
// ignored: there is nothing to write, and so nothing for Options.Observer to
// hear about (the engine is not Durable and never calls it).
func Open(opts engine.Options) *Engine {
	opts = opts.WithDefaults()
	return &Engine{maxBatchBytes: opts.MaxBatchBytes}
}

// Append implements engine.LogEngine.
func (e *Engine) Append(b engine.Batch) error {
	if err := b.Validate(e.maxBatchBytes); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	if b.BaseOffset != e.end {
		return fmt.Errorf("%w: base %d, end %d", engine.ErrNotContiguous, b.BaseOffset, e.end)
	}
	b.Data = append([]byte(nil), b.Data...)
	e.batches = append(e.batches, b)
	e.end = b.NextOffset()
	return nil
}

// Sync implements engine.LogEngine; memory is as durable as it gets at once.
func (e *Engine) Sync(ctx context.Context, end int64) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return engine.ErrClosed
	}
	return ctx.Err()
}

// find returns the index of the batch that holds offset; the caller holds mu
// and has checked start <= offset < end.
func (e *Engine) find(offset int64) int {
	return sort.Search(len(e.batches), func(i int) bool { return e.batches[i].NextOffset() > offset })
}

// Read implements engine.LogEngine.
func (e *Engine) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	if err := engine.CheckReadOffset(offset, e.start, e.end); err != nil {
		return nil, err
	}
	return engine.CopyBatches(e.batches, e.find(offset), maxBytes), nil
}

// Truncate implements engine.LogEngine.
func (e *Engine) Truncate(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	if offset < e.start || offset > e.end {
		return fmt.Errorf("%w: truncate to %d, log is [%d, %d]", engine.ErrOffsetOutOfRange, offset, e.start, e.end)
	}
	i := e.find(offset)
	e.batches = e.batches[:i]
	// With no batch left, the log is empty at its start (the start may have
	// been inside the batch just dropped).
	e.end = e.start
	if i > 0 {
		e.end = e.batches[i-1].NextOffset()
	}
	return nil
}

// DeleteBefore implements engine.LogEngine.
func (e *Engine) DeleteBefore(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	if offset <= e.start {
		return nil
	}
	if offset > e.end {
		e.batches, e.start, e.end = nil, offset, offset
		return nil
	}
	// Drop the batches that end at or before the new start.
	i := e.find(offset)
	e.batches = append([]engine.Batch(nil), e.batches[i:]...)
	e.start = offset
	return nil
}

// StartOffset implements engine.LogEngine.
func (e *Engine) StartOffset() int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.start
}

// EndOffset implements engine.LogEngine.
func (e *Engine) EndOffset() int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.end
}

// Close implements engine.LogEngine.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	e.batches = nil
	return nil
}
