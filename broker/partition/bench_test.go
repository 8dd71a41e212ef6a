package partition_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/badger"
	"github.com/minikafka/minikafka/engines/pebble"
	"github.com/minikafka/minikafka/engines/segment"
)

// benchEngines are the engines the manager benchmarks compare.
var benchEngines = []string{segment.Name, pebble.Name, badger.Name}

// BenchmarkCreateTopic: a topic of 3 partitions created the way a broker's
// reconciler creates the partitions it is placed on (side by side) and led,
// on the OS filesystem under sync=always: what a replica spends before it
// serves a new topic (results/cluster.md, topic-creation), without the
// cluster around it.
func BenchmarkCreateTopic(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng, func(b *testing.B) {
			m, err := partition.OpenManager(partition.Config{Dir: b.TempDir(), Engine: eng})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			for i := 0; b.Loop(); i++ {
				id := uuid.New()
				var wg sync.WaitGroup
				for n := range int32(3) {
					wg.Go(func() {
						p, err := m.Ensure(partition.Spec{Topic: fmt.Sprint("t", i), TopicID: id, Index: n})
						if err != nil {
							b.Error(err)
							return
						}
						leadAlone(b, p)
					})
				}
				wg.Wait()
			}
		})
	}
}

// reopenPartitions is how many partitions BenchmarkReopen's broker holds:
// one broker's share of results/cluster.md's restart-at-scale (1,000
// topics of 10 partitions over 3 brokers, replication factor 1).
const reopenPartitions = 3334

// BenchmarkReopen: OpenManager of a data directory of reopenPartitions
// partitions closed cleanly, one in 100 holding a batch, the others
// empty, as in restart-at-scale. The directory is made once (it takes a
// while); each iteration opens it and, off the clock, closes it.
// MINIKAFKA_BENCH_DIR keeps the directories there between runs.
func BenchmarkReopen(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng, func(b *testing.B) {
			dir := reopenDir(b, eng)
			b.ResetTimer()
			var cpu time.Duration
			for b.Loop() {
				began := cpuTime(b)
				m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime(b) - began
				if n := len(m.Keys()); n != reopenPartitions {
					b.Fatalf("%d partitions reopened, want %d", n, reopenPartitions)
				}
				if err := m.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used so far:
// on a machine shared with other work, a steadier figure than the wall
// time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reopenDir returns a data directory of reopenPartitions partitions of
// engine eng, made if need be.
func reopenDir(b *testing.B, eng string) string {
	b.Helper()
	root := os.Getenv("MINIKAFKA_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := fmt.Sprintf("%s/reopen-%s-%d", root, eng, reopenPartitions)
	if _, err := os.Stat(dir + ".made"); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, EngineOptions: engine.Options{Sync: engine.SyncNever}})
	if err != nil {
		b.Fatal(err)
	}
	const perTopic = 10
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for n := range jobs {
				t := n / perTopic
				p, err := m.Ensure(partition.Spec{Topic: fmt.Sprint("t", t), TopicID: topicID(fmt.Sprint("t", t)), Index: int32(n % perTopic)})
				if err != nil {
					b.Error(err)
					continue
				}
				leadAlone(b, p)
				if n%100 == 0 {
					app, err := p.Append(batchtest.Plain(b, 2))
					if err == nil {
						err = p.WaitDurable(context.Background(), app.LastOffset+1)
					}
					if err != nil {
						b.Error(err)
					}
				}
			}
		})
	}
	for n := range reopenPartitions {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	if b.Failed() {
		b.FailNow()
	}
	if err := os.WriteFile(dir+".made", nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}
