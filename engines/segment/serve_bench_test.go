//go:build linux

package segment

import (
	"fmt"
	"testing"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// BenchmarkServeRead reads back, in 1 MiB reads into a reused buffer (the
// way the broker serves a consumer or a follower), a 32 MiB log this
// process appended (page cache warm): the replicated path's read. b.N full
// passes.
func BenchmarkServeRead(b *testing.B) {
	const logBytes = 32 << 20
	for _, size := range []int{1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			e, err := Open(b.TempDir(), engine.Options{Sync: engine.SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for range logBytes / size {
				if err := e.Append(enginetest.Batch(e.EndOffset(), 10, size)); err != nil {
					b.Fatal(err)
				}
			}
			scan := scanners[1].scan // into
			scan(b, e)               // the tail reaches the file
			b.SetBytes(logBytes)
			b.ResetTimer()
			for range b.N {
				scan(b, e)
			}
		})
	}
}
