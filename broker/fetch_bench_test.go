package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/brokertest"
)

// BenchmarkProduceFetch: 8 MiB produced to one segment partition (batches
// of 16 records of 1 KiB), then each pass fetches it all from offset 0 in
// 1 MiB fetches, as a consumer or follower catching up would: the read,
// join, encode and write of the fetch path, plus the client's decoding of
// the frame. b.N full passes.
func BenchmarkProduceFetch(b *testing.B) {
	br := brokertest.Start(b, brokertest.Engine("segment"))
	br.CreateTopic(b, "bench", 1)
	ctx := context.Background()
	cl := br.Client(b, kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1<<10)
	for i := range value {
		value[i] = byte(i * 7)
	}
	const records = 8 << 10
	for i := 0; i < records; i += 16 {
		rs := make([]*kgo.Record, 16)
		for k := range rs {
			rs[k] = &kgo.Record{Value: value}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	tds, err := br.Admin(b).ListTopics(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	id := tds["bench"].ID
	pass := func() int {
		n := 0
		for off := int64(0); off < records; {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxBytes = -1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "bench", id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = off, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := cl.Request(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			sp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if sp.ErrorCode != 0 || len(sp.RecordBatches) == 0 {
				b.Fatalf("fetch at %d: error %d, %d bytes", off, sp.ErrorCode, len(sp.RecordBatches))
			}
			off = lastOffset(b, sp.RecordBatches) + 1
			n += len(sp.RecordBatches)
		}
		return n
	}
	b.SetBytes(int64(pass()))
	b.ResetTimer()
	for range b.N {
		pass()
	}
}

// lastOffset is the last offset of the last whole batch in records.
func lastOffset(b *testing.B, records []byte) int64 {
	var last int64
	for len(records) >= 61 {
		var rb kmsg.RecordBatch
		n := 12 + int(int32(uint32(records[8])<<24|uint32(records[9])<<16|uint32(records[10])<<8|uint32(records[11])))
		if n > len(records) {
			break
		}
		if err := rb.ReadFrom(records[:n]); err != nil {
			b.Fatal(err)
		}
		last = rb.FirstOffset + int64(rb.LastOffsetDelta)
		records = records[n:]
	}
	return last
}
