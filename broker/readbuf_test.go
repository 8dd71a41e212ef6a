package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/broker/bufpool"
)

// TestPooledReadBuffersPoisoned: fetches serve records from pooled buffers
// (bufpool) released once the response is written. With poisoning on, a
// buffer released while a response still referenced it would hand a
// follower or a consumer PoisonByte bytes: acks=all would stall (followers
// refuse a batch whose CRC fails) and the consumer would see wrong values.
// Run under -race, a release racing the encoding is reported as a race.
func TestPooledReadBuffersPoisoned(t *testing.T) {
	bufpool.SetPoison(true)
	t.Cleanup(func() { bufpool.SetPoison(false) })
	c := brokertest.StartCluster(t, 3, brokertest.Engine("segment"))
	c.CreateTopic(t, "pool", 2, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const perPartition = 600
	value := func(p int32, i int) []byte {
		v := make([]byte, 200+i%700)
		for j := range v {
			v[j] = byte(i + j + int(p))
		}
		binary.BigEndian.PutUint32(v, uint32(i))
		return v
	}
	prod := c.Client(t, kgo.DefaultProduceTopic("pool"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	cons := c.Client(t, kgo.ConsumeTopics("pool"), kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(16<<10))

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for p := range int32(2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perPartition; i += 20 {
				rs := make([]*kgo.Record, 0, 20)
				for k := i; k < i+20; k++ {
					rs = append(rs, &kgo.Record{Partition: p, Value: value(p, k)})
				}
				if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					errs <- fmt.Errorf("produce to %d: %w", p, err)
					return
				}
			}
		}()
	}

	next := map[int32]int{}
	for next[0]+next[1] < 2*perPartition && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		for _, e := range fs.Errors() {
			require.NoError(t, e.Err, "fetch of %s-%d", e.Topic, e.Partition)
		}
		fs.EachRecord(func(r *kgo.Record) {
			i := next[r.Partition]
			require.Equal(t, value(r.Partition, i), r.Value, "partition %d record %d", r.Partition, i)
			next[r.Partition] = i + 1
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, perPartition, next[0], "partition 0 consumed whole")
	assert.Equal(t, perPartition, next[1], "partition 1 consumed whole")
}
