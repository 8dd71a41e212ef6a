package interop

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

const restartRecords = 3000

// TestRestartLosesNothingAcknowledged restarts a durable broker while
// franz-go's idempotent producer is sending: every record acknowledged,
// before or after the restart, is read back exactly once and in order, after
// a second restart too.
func TestRestartLosesNothingAcknowledged(t *testing.T) {
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		if s.Restart == nil || !s.Durable {
			t.Skipf("%s cannot restart with its data", s.Name)
		}
		const topic = "restart"
		createTopic(t, s.Addr, topic, 3)
		recs := makeRecords(500, restartRecords, false)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
			kgo.MaxBufferedRecords(200))
		require.NoError(t, err)
		defer cl.Close()

		var (
			wg      sync.WaitGroup
			acked   atomic.Int64
			mu      sync.Mutex
			errs    []error
			okIndex = make([]bool, len(recs))
		)
		restarted := make(chan struct{})
		// Produce in the background; Produce blocks once 200 records are
		// buffered, so the restart lands while records are in flight.
		go func() {
			for i := range recs {
				if i == len(recs)/2 {
					<-restarted
				}
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Key: recs[i].Key, Value: recs[i].Value}, func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					recs[i].Partition, recs[i].Offset = r.Partition, r.Offset
					okIndex[i] = true
					acked.Add(1)
				})
			}
		}()
		waitFor(t, func() bool { return acked.Load() >= restartRecords/4 }, "a quarter of the records acknowledged")
		s.Restart(t)
		close(restarted)
		waitFor(t, func() bool { return acked.Load()+int64(len(errsSnapshot(&mu, &errs))) == restartRecords }, "every record answered")
		wg.Wait()
		assert.Empty(t, errs, "the producer retries through the restart")

		var want []rec
		for i, ok := range okIndex {
			if ok {
				want = append(want, recs[i])
			}
		}
		checkSame(t, want, consumeAll(t, s.Addr, topic, len(want)))
		s.Restart(t)
		checkSame(t, want, consumeAll(t, s.Addr, topic, len(want)))
	})
}

func errsSnapshot(mu *sync.Mutex, errs *[]error) []error {
	mu.Lock()
	defer mu.Unlock()
	return append([]error(nil), *errs...)
}

// waitFor polls cond until it holds or a minute passes.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
