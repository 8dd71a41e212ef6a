package broker_test

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/brokertest"
)

// fetchReq is a Fetch v12 of topic partition 0 from offset.
func fetchReq(topic string, offset int64, maxWait time.Duration, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), minBytes, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// readResponse reads the response to req sent earlier on c.
func readResponse(t *testing.T, c *rawConn, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	body := c.readFrame()
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(body)), "correlation id")
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		body = body[1:]
	}
	require.NoError(t, resp.ReadFrom(body))
	return resp
}

// parkedSignal makes b report each fetch that starts to wait; wait blocks
// until one has.
func parkedSignal(t *testing.T, b *brokertest.Broker) (wait func()) {
	parked := make(chan struct{}, 16)
	broker.OnFetchParked(b.Server, func() {
		select {
		case parked <- struct{}{}:
		default:
		}
	})
	return func() {
		t.Helper()
		select {
		case <-parked:
		case <-time.After(10 * time.Second):
			t.Fatal("the fetch never started to wait")
		}
	}
}

func TestFetchLongPoll(t *testing.T) {
	b, clk := manualBroker(t, time.Minute, time.Hour)
	b.CreateTopic(t, "lp", 1)
	parked := parkedSignal(t, b)

	t.Run("woken by data before MaxWait", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		req := fetchReq("lp", 0, time.Hour, 1)
		c.write(c.encode(req))
		parked()
		produceRaw(t, dialRaw(t, b.Addr), "lp", -1, batchtest.Plain(t, 2))
		resp := readResponse(t, c, req, c.corr).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		require.Zero(t, sp.ErrorCode)
		assert.Equal(t, int64(2), sp.HighWatermark)
		recs := batchtest.MustDecode(t, sp.RecordBatches)
		assert.Len(t, recs, 2, "the records that woke the fetch")
		assert.Zero(t, resp.SessionID, "sessions declined")
	})
	t.Run("woken by data on one of several partitions", func(t *testing.T) {
		b.CreateTopic(t, "lp2", 3)
		c := dialRaw(t, b.Addr)
		req := fetchReq("lp2", 0, time.Hour, 1)
		for p := int32(1); p < 3; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		c.write(c.encode(req))
		parked()
		pr := kmsg.NewPtrProduceRequest()
		pr.SetVersion(9)
		pr.Acks, pr.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "lp2"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 2, batchtest.Plain(t, 1)
		rt.Partitions = append(rt.Partitions, rp)
		pr.Topics = append(pr.Topics, rt)
		dialRaw(t, b.Addr).roundTrip(pr)
		resp := readResponse(t, c, req, c.corr).(*kmsg.FetchResponse)
		require.Len(t, resp.Topics[0].Partitions, 3)
		assert.Len(t, batchtest.MustDecode(t, resp.Topics[0].Partitions[2].RecordBatches), 1,
			"answered as soon as one partition had data, without the clock moving")
	})
	t.Run("MaxWait on the injected clock", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		req := fetchReq("lp", 2, 500*time.Millisecond, 1)
		c.write(c.encode(req))
		parked()
		clk.Advance(500 * time.Millisecond)
		resp := readResponse(t, c, req, c.corr).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		require.Zero(t, sp.ErrorCode)
		assert.Empty(t, sp.RecordBatches, "nothing new")
	})
	t.Run("MinBytes not reached waits for MaxWait and returns what there is", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		req := fetchReq("lp", 0, time.Second, 1<<20)
		c.write(c.encode(req))
		parked()
		clk.Advance(time.Second)
		resp := readResponse(t, c, req, c.corr).(*kmsg.FetchResponse)
		assert.Len(t, batchtest.MustDecode(t, resp.Topics[0].Partitions[0].RecordBatches), 2)
	})
	t.Run("offset out of range answers at once", func(t *testing.T) {
		resp := dialRaw(t, b.Addr).roundTrip(fetchReq("lp", 99, time.Hour, 1)).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		assert.Equal(t, kerr.OffsetOutOfRange.Code, sp.ErrorCode)
		assert.Equal(t, int64(2), sp.HighWatermark)
	})
	t.Run("unknown partition answers at once", func(t *testing.T) {
		resp := dialRaw(t, b.Addr).roundTrip(fetchReq("nope", 0, time.Hour, 1)).(*kmsg.FetchResponse)
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	})
	t.Run("a fetch session is declined", func(t *testing.T) {
		req := fetchReq("lp", 0, 0, 1)
		req.SessionID, req.SessionEpoch = 42, 1
		resp := dialRaw(t, b.Addr).roundTrip(req).(*kmsg.FetchResponse)
		assert.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)
	})
}

func TestFetchMaxBytes(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "mb", 2)
	c := dialRaw(t, b.Addr)
	for range 3 {
		produceRaw(t, c, "mb", -1, batchtest.Plain(t, 10))
	}
	one := len(batchtest.Plain(t, 10))

	req := fetchReq("mb", 0, 0, 1)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1 // less than a batch
	resp := c.roundTrip(req).(*kmsg.FetchResponse)
	assert.Len(t, resp.Topics[0].Partitions[0].RecordBatches, one, "at least one whole batch for the first partition")

	req = fetchReq("mb", 0, 0, 1)
	req.MaxBytes = int32(2*one + 1)
	resp = c.roundTrip(req).(*kmsg.FetchResponse)
	assert.Len(t, resp.Topics[0].Partitions[0].RecordBatches, 2*one, "whole batches within MaxBytes")
}

func TestPipelinedRequestsAnswerInOrder(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "pipe", 1)
	c := dialRaw(t, b.Addr)
	var reqs []kmsg.Request
	var wire []byte
	for i := range 12 {
		var req kmsg.Request
		if i%4 == 3 {
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(12)
			req = m
		} else {
			req = produceRequest("pipe", -1, batchtest.Plain(t, 3))
		}
		reqs = append(reqs, req)
		wire = append(wire, c.encode(req)...)
	}
	c.write(wire) // all at once: the broker reads ahead of its answers
	want := int64(0)
	for i, req := range reqs {
		resp := readResponse(t, c, req, int32(i+1))
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			sp := pr.Topics[0].Partitions[0]
			require.Zero(t, sp.ErrorCode)
			assert.Equal(t, want, sp.BaseOffset, "request %d appended in order", i)
			want += 3
		}
	}
}

func TestAcksZeroHasNoResponse(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "a0", 1)
	c := dialRaw(t, b.Addr)
	c.write(c.encode(produceRequest("a0", 0, batchtest.Plain(t, 1))))
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(12)
	resp := c.roundTrip(m) // the next frame is the metadata response
	require.IsType(t, &kmsg.MetadataResponse{}, resp)
	part, err := b.Partitions().Partition("a0", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), part.EndOffset(), "the acks=0 batch was appended")
}

func TestProduceRefusals(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "pr", 1)
	txnBatch := batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("t", 1), Idempotent: true, ProducerID: 5, ExtraAttributes: 0x10})
	for _, tc := range []struct {
		name    string
		topic   string
		version int16
		acks    int16
		txn     bool
		want    *kerr.Error
		records []byte
	}{
		{"v2 message sets", "pr", 2, -1, false, kerr.UnsupportedVersion, nil},
		{"acks=2", "pr", 9, 2, false, kerr.InvalidRequiredAcks, nil},
		// No transaction coordinator yet: the client retries.
		{"transactional, not verified", "pr", 9, -1, true, kerr.NotEnoughReplicas, txnBatch},
		{"transactional batch without a transactional id", "pr", 9, -1, false, kerr.InvalidRecord, txnBatch},
		{"internal topic", "__consumer_offsets", 9, -1, false, kerr.InvalidTopicException, nil},
		// Auto-creation is on (brokertest's default), but as in Kafka only
		// a Metadata request creates a topic.
		{"unknown topic", "never-created", 9, -1, false, kerr.UnknownTopicOrPartition, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kmsg.NewPtrProduceRequest()
			p.SetVersion(tc.version)
			p.Acks, p.TimeoutMillis = tc.acks, 1000
			if tc.txn {
				id := "txn"
				p.TransactionID = &id
			}
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batchtest.Plain(t, 1)
			if tc.records != nil {
				rp.Records = tc.records
			}
			rt.Partitions = append(rt.Partitions, rp)
			p.Topics = append(p.Topics, rt)
			resp := dialRaw(t, b.Addr).roundTrip(p).(*kmsg.ProduceResponse)
			assert.Equal(t, tc.want.Code, resp.Topics[0].Partitions[0].ErrorCode)
		})
	}
	part, err := b.Partitions().Partition("pr", 0)
	require.NoError(t, err)
	assert.Zero(t, part.EndOffset(), "nothing appended")
	_, created := b.Server.Metadata().Topic("never-created")
	assert.False(t, created, "a produce does not create a topic")
}

func TestAcksZeroErrorClosesTheConnection(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.AutoCreate = false }))
	c := dialRaw(t, b.Addr)
	c.write(c.encode(produceRequest("no-such-topic", 0, batchtest.Plain(t, 1))))
	c.expectClosed("acks=0 produce to an unknown topic")
	metadataWorks(t, b.Addr)
}

// TestFetchResponseBudget: with room for less than one fetch's records,
// concurrent fetches still all complete (one at a time) and every byte of
// the budget is given back.
func TestFetchResponseBudget(t *testing.T) {
	b := brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.MaxResponseBytes = 1000 }))
	b.CreateTopic(t, "rb", 1)
	w := dialRaw(t, b.Addr)
	for range 10 {
		produceRaw(t, w, "rb", -1, batchtest.Make(t, batchtest.Spec{Values: [][]byte{bytes.Repeat([]byte("v"), 2000)}}))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := dialRaw(t, b.Addr).roundTrip(fetchReq("rb", 0, 0, 1)).(*kmsg.FetchResponse)
			assert.Len(t, batchtest.MustDecode(t, resp.Topics[0].Partitions[0].RecordBatches), 10)
		}()
	}
	wg.Wait()
	// The broker gives its budget back just after the write returns.
	deadline := time.Now().Add(10 * time.Second)
	for gauge(t, b, "minikafka_inflight_response_bytes")+gauge(t, b, "minikafka_inflight_request_bytes") > 0 {
		require.True(t, time.Now().Before(deadline), "budget not given back")
		time.Sleep(time.Millisecond)
	}
}

// TestFetchNamingAPartitionManyTimes: a request that names one partition
// twenty thousand times is served with a bounded number of goroutines, in
// its reads and in its long poll.
func TestFetchNamingAPartitionManyTimes(t *testing.T) {
	b, _ := manualBroker(t, time.Minute, time.Hour)
	b.CreateTopic(t, "dup", 1)
	parked := parkedSignal(t, b)
	w := dialRaw(t, b.Addr)
	produceRaw(t, w, "dup", -1, batchtest.Plain(t, 1))

	req := fetchReq("dup", 1, time.Hour, 1)
	one := req.Topics[0].Partitions[0]
	for range 20_000 {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, one)
	}
	before := runtime.NumGoroutine()
	c := dialRaw(t, b.Addr)
	c.write(c.encode(req))
	parked()
	assert.Less(t, runtime.NumGoroutine()-before, 100, "goroutines while the fetch waits")
	produceRaw(t, w, "dup", -1, batchtest.Plain(t, 1))
	resp := readResponse(t, c, req, c.corr).(*kmsg.FetchResponse)
	require.Len(t, resp.Topics[0].Partitions, 20_001)
	assert.NotEmpty(t, resp.Topics[0].Partitions[0].RecordBatches)
}
