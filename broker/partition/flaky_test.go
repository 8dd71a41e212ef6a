package partition_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// flaky is a memory engine whose appends can be made to fail and whose
// syncs can be held at a gate or made to fail, to test what the partition
// does when the storage misbehaves.
const flakyName = "flaky-test"

var errInjected = errors.New("injected I/O error")

type flakyEngine struct {
	*memory.Engine

	mu         sync.Mutex
	failAppend bool
	failSync   bool
	failDelete bool          // DeleteBefore
	gate       chan struct{} // when non-nil, Sync waits for it to close
	syncs      int           // Sync calls so far
}

var flakies sync.Map // dir -> *flakyEngine

func init() {
	engine.Register(engine.Driver{
		Name: flakyName,
		Caps: engine.Capabilities{CustomFS: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			f := &flakyEngine{Engine: memory.Open(opts)}
			flakies.Store(dir, f)
			return f, nil
		},
	})
}

// logDirOf is the directory of p's log in the store of the manager whose
// data directory is dataDir (a DirStore's: the flaky and segment engines').
func logDirOf(dataDir string, p *partition.Partition) string {
	return filepath.Join(dataDir, "store", p.LogID().String())
}

// flakyOf returns the flaky engine of p, in the manager on dataDir.
func flakyOf(dataDir string, p *partition.Partition) *flakyEngine {
	return flakyAt(logDirOf(dataDir, p))
}

// flakyAt returns the flaky engine opened on dir.
func flakyAt(dir string) *flakyEngine {
	f, ok := flakies.Load(dir)
	if !ok {
		panic("no flaky engine opened on " + dir)
	}
	return f.(*flakyEngine)
}

func (f *flakyEngine) set(fn func(f *flakyEngine)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *flakyEngine) Append(b engine.Batch) error {
	f.mu.Lock()
	fail := f.failAppend
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Engine.Append(b)
}

func (f *flakyEngine) DeleteBefore(offset int64) error {
	f.mu.Lock()
	fail := f.failDelete
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Engine.DeleteBefore(offset)
}

func (f *flakyEngine) Sync(ctx context.Context, end int64) error {
	f.mu.Lock()
	gate, fail := f.gate, f.failSync
	f.syncs++
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return errInjected
	}
	return f.Engine.Sync(ctx, end)
}
