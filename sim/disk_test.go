package sim

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// TestCrashModelConformance runs the engine conformance suite on the crash
// model, the engine of the simulator's quorum logs and of most of its
// partitions, through the registered driver: one simulated disk holds the
// logs of every directory the suite opens, whose marker files go to the
// filesystem the suite gives. The model does no data I/O through that
// filesystem, so it declares no CustomFS here (the cases that inject
// fsync failures through one skip); and it has no flusher of its own:
// under sync=interval the simulator syncs it on its clock, which a
// goroutine does here.
func TestCrashModelConformance(t *testing.T) {
	d := newDisk(&Stats{Faults: map[string]int{}}, rand.New(rand.NewPCG(1, 2)))
	model, err := engine.Lookup(EngineName)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, engine.Driver{
		Name: EngineName,
		Caps: engine.Capabilities{Durable: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			opts.FS = &diskFS{FS: opts.WithDefaults().FS, disk: d}
			e, err := model.Open(dir, opts)
			if err != nil || opts.Sync != engine.SyncInterval {
				return e, err
			}
			go func() {
				for {
					time.Sleep(syncIntervalMs * time.Millisecond)
					if err := e.Sync(context.Background(), e.EndOffset()); err != nil {
						return // closed
					}
				}
			}()
			return e, nil
		},
	})
}
