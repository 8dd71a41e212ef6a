package partition_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
)

// lockedMem keeps MemFS.Lock and the crash clones apart: MemFS.Lock
// read-locks the filesystem twice (it creates the lock file while holding
// it), and a clone that asks for the write lock in between, from another
// goroutine's write, deadlocks both (it hung a full test run here once).
type lockedMem struct {
	*vfs.MemFS
	mu *sync.Mutex
}

func (l lockedMem) Lock(name string) (io.Closer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.MemFS.Lock(name)
}

// TestCreateCrashAtEveryStep: a partition's creation lets its syncs run
// side by side and puts partition.meta in place last. A power loss at any
// write of the creation, with any share of the unsynced data kept, leaves
// a directory that opens without error, and either without the partition
// (an orphan removed) or with it whole: it takes an append and survives a
// reopen. Once Ensure has returned, the partition survives a power loss
// that keeps nothing unsynced.
func TestCreateCrashAtEveryStep(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			mem, dir := vfs.NewCrashableMem(), "/data"
			m, err := openFS(t, eng, mem, dir)
			require.NoError(t, err)
			require.NoError(t, m.Close())

			rng := rand.New(rand.NewPCG(11, uint64(len(eng))))
			var mu sync.Mutex
			var images []vfs.FS
			counting := false
			fs := errorfs.Wrap(lockedMem{mem, &mu}, errorfs.InjectorFunc(func(op errorfs.Op) error {
				mu.Lock()
				defer mu.Unlock()
				if counting && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
					images = append(images, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
				}
				return nil
			}))
			m, err = openFS(t, eng, fs, dir)
			require.NoError(t, err)
			mu.Lock()
			counting = true
			mu.Unlock()
			createTopic(t, m, "t", 1, nil)
			mu.Lock()
			counting = false
			images = append(images, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
			mu.Unlock()
			require.NoError(t, m.Close())
			require.Greater(t, len(images), 5, "the creation's writes were seen")

			whole := 0
			for i, img := range images {
				t.Run(fmt.Sprintf("write%d", i), func(t *testing.T) {
					m, err := openFS(t, eng, img, dir)
					require.NoError(t, err, "the directory opens")
					_, err = m.Partition("t", 0)
					if i == len(images)-1 {
						require.NoError(t, err, "the partition Ensure returned is there")
					}
					if err == nil {
						whole++
						p := onePartition(t, m, "t") // held already: it leads it
						app, err := p.Append(batchtest.Plain(t, 2))
						require.NoError(t, err)
						require.NoError(t, p.WaitDurable(ctxT(t), app.LastOffset+1))
					}
					require.NoError(t, m.Close())
					m, err = openFS(t, eng, img, dir)
					require.NoError(t, err, "and opens again")
					defer m.Close()
					if p, err := m.Partition("t", 0); err == nil {
						require.Equal(t, int64(2), p.EndOffset())
					}
				})
			}
			t.Logf("%d crash images, %d with the partition", len(images), whole)
		})
	}
}
