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

		want, errs, _ := produceThrough(t, ctx, cl, recs, func() { s.Restart(t) })
		assert.Empty(t, errs, "the producer retries through the restart")

		checkSame(t, want, consumeAll(t, s.Addr, topic, len(want)))
		s.Restart(t)
		checkSame(t, want, consumeAll(t, s.Addr, topic, len(want)))
	})
}

// produceThrough produces recs with cl (to its default topic) around an
// interruption of the broker: once a quarter of them are acknowledged it
// calls interrupt (a restart, a kill -9 and a start), holding the second
// half back until interrupt returns; Produce blocks once the client's
// buffer is full, so the interruption lands while records are in flight.
// When every record is answered it returns those acknowledged, with their
// partitions and offsets in produce order, the delivery errors, and how
// many were acknowledged when interrupt was called.
func produceThrough(t *testing.T, ctx context.Context, cl *kgo.Client, recs []rec, interrupt func()) (acked []rec, errs []error, before int64) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		n       atomic.Int64
		mu      sync.Mutex
		okIndex = make([]bool, len(recs))
		resumed = make(chan struct{})
	)
	answered := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return n.Load() + int64(len(errs))
	}
	go func() {
		for i := range recs {
			if i == len(recs)/2 {
				<-resumed
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
				n.Add(1)
			})
		}
	}()
	require.Eventually(t, func() bool { return n.Load() >= int64(len(recs)/4) }, time.Minute, 5*time.Millisecond, "a quarter of the records acknowledged")
	before = n.Load()
	interrupt()
	close(resumed)
	require.Eventually(t, func() bool { return answered() == int64(len(recs)) }, time.Minute, 5*time.Millisecond, "every record answered")
	wg.Wait()
	for i, ok := range okIndex {
		if ok {
			acked = append(acked, recs[i])
		}
	}
	return acked, errs, before
}
