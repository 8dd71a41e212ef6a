package interop

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/interop/interoptest"
)

const franzRecords = 600

// produceFranz produces recs with franz-go's idempotent producer (acks=all)
// and fills in the partition and offset each was acknowledged at.
func produceFranz(t *testing.T, addr, topic, codec string, recs []rec, opts ...kgo.Opt) {
	t.Helper()
	c, err := load.Codec(codec)
	require.NoError(t, err)
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(c),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	var wg sync.WaitGroup
	errs := make([]error, len(recs))
	for i := range recs {
		wg.Add(1)
		cl.Produce(interoptest.Context(t), &kgo.Record{Key: recs[i].Key, Value: recs[i].Value}, func(r *kgo.Record, err error) {
			defer wg.Done()
			errs[i] = err
			recs[i].Partition, recs[i].Offset = r.Partition, r.Offset
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "record %d", i)
	}
}

// TestFranzGo: franz-go's idempotent producer writes every codec, its
// consumer reads everything back byte for byte in per-partition order.
func TestFranzGo(t *testing.T) {
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		for i, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				topic := "franz-" + codec
				createTopic(t, s.Addr, topic, 3)
				recs := makeRecords(uint64(100+i), franzRecords, false)
				produceFranz(t, s.Addr, topic, codec, recs)
				assert.Equal(t, 3, spread(recs), "keys spread over every partition")
				checkSame(t, recs, consumeAll(t, s.Addr, topic, len(recs)))
			})
		}
	})
}
