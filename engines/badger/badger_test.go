package badger_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
	"github.com/minikafka/minikafka/engines/badger"
)

func TestConformance(t *testing.T) { enginetest.Run(t, badger.Driver) }

// BenchmarkSyncedAppend measures 1 KiB appends, each followed by its own
// Sync, from 1 and 256 writers, against the same writers each committing
// their own synced Badger transaction (what the engine's group commit
// replaces).
func BenchmarkSyncedAppend(b *testing.B) {
	data := make([]byte, 1024)
	for _, writers := range []int{1, 256} {
		b.Run(fmt.Sprintf("engine/%dwriters", writers), func(b *testing.B) {
			e, err := badger.Open(b.TempDir(), engine.Options{})
			require.NoError(b, err)
			defer e.Close()
			var assign sync.Mutex
			runWriters(b, writers, func() error {
				assign.Lock()
				end := e.EndOffset()
				err := e.Append(engine.Batch{BaseOffset: end, Records: 1, Data: data})
				assign.Unlock()
				if err != nil {
					return err
				}
				return e.Sync(context.Background(), end+1)
			})
		})
		b.Run(fmt.Sprintf("txnPerWrite/%dwriters", writers), func(b *testing.B) {
			db, err := badgerdb.Open(badgerdb.DefaultOptions(filepath.Join(b.TempDir(), "db")).
				WithSyncWrites(true).WithLogger(nil))
			require.NoError(b, err)
			defer db.Close()
			var key atomic.Uint64
			runWriters(b, writers, func() error {
				k := binary.BigEndian.AppendUint64(nil, key.Add(1))
				return db.Update(func(txn *badgerdb.Txn) error { return txn.Set(k, data) })
			})
		})
	}
}

// runWriters calls write b.N times in all from writers goroutines and
// reports records/s.
func runWriters(b *testing.B, writers int, write func() error) {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	b.ResetTimer()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := write(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
