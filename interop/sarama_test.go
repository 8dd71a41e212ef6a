package interop

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/interop/interoptest"
)

const saramaRecords = 400

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

func saramaConfig(codec string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "interop-sarama"
	// A version sarama knows and mini-kafka's advertised ranges cover:
	// record batches v2, zstd (needs 2.1+), idempotence.
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1 // sarama's rule for idempotence
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Compression = saramaCodecs[codec]
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// produceSarama sends recs with sarama's sync producer, in batches so the
// compressed batches hold many records, and fills in partitions and offsets.
func produceSarama(t *testing.T, addr, topic, codec string, recs []rec) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig(codec))
	require.NoError(t, err, "sarama producer")
	defer func() { require.NoError(t, p.Close()) }()
	const chunk = 100
	for start := 0; start < len(recs); start += chunk {
		end := min(start+chunk, len(recs))
		msgs := make([]*sarama.ProducerMessage, 0, end-start)
		for _, r := range recs[start:end] {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic,
				Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value)})
		}
		require.NoError(t, p.SendMessages(msgs), "send records %d to %d", start, end)
		for i, m := range msgs {
			recs[start+i].Partition, recs[start+i].Offset = m.Partition, m.Offset
		}
	}
}

// consumeSarama reads n records of topic from the oldest offset with one
// sarama partition consumer per partition.
func consumeSarama(t *testing.T, addr, topic, codec string, n int) []rec {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, saramaConfig(codec))
	require.NoError(t, err, "sarama consumer")
	defer func() { require.NoError(t, c.Close()) }()
	parts, err := c.Partitions(topic)
	require.NoError(t, err)
	msgs := make(chan *sarama.ConsumerMessage)
	errs := make(chan *sarama.ConsumerError)
	done := make(chan struct{})
	defer close(done) // after the AsyncCloses: a forwarder blocked on a send gives up
	for _, p := range parts {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		require.NoError(t, err, "partition %d", p)
		defer pc.AsyncClose()
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-done:
				}
			}
		}()
		go func() {
			for e := range pc.Errors() {
				select {
				case errs <- e:
				case <-done:
				}
			}
		}()
	}
	var got []rec
	deadline := time.After(60 * time.Second)
	for len(got) < n {
		select {
		case m := <-msgs:
			got = append(got, rec{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value})
		case e := <-errs:
			t.Fatalf("sarama consumer: %v", e)
		case <-deadline:
			t.Fatalf("sarama consumed %d of %d records", len(got), n)
		}
	}
	return got
}

// TestSarama: sarama's idempotent sync producer with every codec, its
// consumer reads everything back; franz-go reads sarama's batches too.
func TestSarama(t *testing.T) {
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		for i, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				topic := "sarama-" + codec
				createTopic(t, s.Addr, topic, 3)
				recs := makeRecords(uint64(200+i), saramaRecords, false)
				produceSarama(t, s.Addr, topic, codec, recs)
				assert.Equal(t, 3, spread(recs), "keys spread over every partition")
				checkSame(t, recs, consumeSarama(t, s.Addr, topic, codec, len(recs)))
				checkSame(t, recs, consumeAll(t, s.Addr, topic, len(recs)))
			})
		}
	})
}
