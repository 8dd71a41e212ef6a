package load

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/interop/interoptest"
)

func server(t *testing.T) Client {
	return Client{Brokers: []string{interoptest.Kfake.Start(t, 1).Addr}}
}

// eachServer runs fn on kfake and on our broker.
func eachServer(t *testing.T, fn func(t *testing.T, c Client)) {
	for _, tg := range []interoptest.Target{interoptest.Kfake, interoptest.Broker("memory")} {
		t.Run(tg.Name, func(t *testing.T) {
			fn(t, Client{Brokers: []string{tg.Start(t, 1).Addr}})
		})
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		total int64
		n     int
	}{{10, 3}, {2, 5}, {0, 1}, {1_000_000, 7}} {
		t.Run(fmt.Sprintf("%d/%d", c.total, c.n), func(t *testing.T) {
			var sum, next int64
			for i := range c.n {
				share, first := split(c.total, c.n, i)
				assert.Equal(t, next, first, "client %d starts where %d ended", i, i-1)
				sum += share
				next = first + share
			}
			assert.Equal(t, c.total, sum)
		})
	}
}

func TestStamp(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	v := make([]byte, 100)
	Stamp(v, at)
	got, ok := SentAt(v)
	require.True(t, ok)
	assert.True(t, at.Equal(got), "got %v", got)

	short := make([]byte, StampBytes-1)
	Stamp(short, at)
	_, ok = SentAt(short)
	assert.False(t, ok, "too short to carry a stamp")

	_, ok = SentAt([]byte("not a loadgen record at all"))
	assert.False(t, ok, "foreign records carry no stamp")
}

func TestConfigErrors(t *testing.T) {
	brokers := Client{Brokers: []string{"127.0.0.1:1"}}
	cases := []struct {
		name string
		cfg  ProduceConfig
	}{
		{"no brokers", ProduceConfig{Topic: "t", Records: 1}},
		{"no topic", ProduceConfig{Client: brokers, Records: 1}},
		{"no records or duration", ProduceConfig{Client: brokers, Topic: "t"}},
		{"negative rate", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Rate: -1}},
		{"bad acks", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Acks: "2"}},
		{"idempotent acks 1", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Acks: "1", Idempotent: true}},
		{"bad codec", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Compression: "brotli"}},
		{"transactions of no records", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Idempotent: true, Txn: &Txn{}}},
		{"transactions not idempotent", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Txn: &Txn{Records: 1}}},
		{"transactions at a rate", ProduceConfig{Client: brokers, Topic: "t", Records: 1, Idempotent: true, Rate: 1, Txn: &Txn{Records: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Produce(context.Background(), c.cfg)
			assert.ErrorIs(t, err, ErrConfig)
		})
	}
	_, err := Consume(context.Background(), ConsumeConfig{Client: brokers})
	assert.ErrorIs(t, err, ErrConfig, "consume without topic")
	_, err = Consume(context.Background(), ConsumeConfig{Client: brokers, Topic: "t"})
	assert.ErrorIs(t, err, ErrConfig, "consume that would never end")
}

// TestProduceThenConsume: every acknowledged record comes back, with the
// keys and the stamped values the producer wrote.
func TestProduceThenConsume(t *testing.T) {
	eachServer(t, func(t *testing.T, c Client) {
		for _, codec := range []string{"none", "zstd"} {
			testProduceThenConsume(t, c, codec)
		}
	})
}

func testProduceThenConsume(t *testing.T, c Client, codec string) {
	t.Run(codec, func(t *testing.T) {
		ctx := interoptest.Context(t)
		topic := "pc-" + codec
		require.NoError(t, EnsureTopic(ctx, c, topic, 4))
		var progress []int64
		pr, err := Produce(ctx, ProduceConfig{
			Client: c, Topic: topic, Records: 2000, RecordBytes: 100, Keys: 10,
			Acks: "all", Idempotent: true, Compression: codec, Clients: 2, InFlight: 64,
			Progress: func(n int64) { progress = append(progress, n) },
		})
		require.NoError(t, err)
		assert.Equal(t, int64(2000), pr.Records)
		assert.Zero(t, pr.Errors, pr.FirstError)
		assert.Equal(t, int64(2000), pr.Latency.Count)
		assert.Equal(t, int64(2000*(100+len("key-0"))), pr.Bytes)
		assert.Positive(t, pr.Batches)
		assert.LessOrEqual(t, pr.Batches, pr.Records, "a batch holds at least one record")
		require.NotEmpty(t, progress)
		assert.Equal(t, int64(2000), progress[len(progress)-1], "the last progress call has the final count")

		keys := map[string]int{}
		cr, err := Consume(ctx, ConsumeConfig{Client: c, Topic: topic, Records: 2000, Check: func(r *kgo.Record) {
			keys[string(r.Key)]++
			_, ok := SentAt(r.Value)
			assert.True(t, ok, "value carries its send time")
			assert.Len(t, r.Value, 100)
		}})
		require.NoError(t, err)
		assert.Equal(t, int64(2000), cr.Records)
		assert.Equal(t, int64(2000), cr.EndToEnd.Count)
		assert.Len(t, keys, 10)
		for k, n := range keys {
			assert.Equal(t, 200, n, "key %s", k)
		}
	})
}

func TestOpenLoopProducesEveryRecord(t *testing.T) {
	ctx := interoptest.Context(t)
	c := server(t)
	require.NoError(t, EnsureTopic(ctx, c, "open", 2))
	pr, err := Produce(ctx, ProduceConfig{Client: c, Topic: "open", Records: 300, RecordBytes: 50, Rate: 3000, Acks: "1"})
	require.NoError(t, err)
	assert.Equal(t, int64(300), pr.Records)
	assert.Equal(t, int64(299), pr.Latency.Count, "all but the record that primes the client before the schedule starts")
	assert.Zero(t, pr.Errors)
}

// TestMoreClientsThanRecords: a client with no share sends nothing and
// ends (rather than running forever as if for a duration).
func TestMoreClientsThanRecords(t *testing.T) {
	ctx := interoptest.Context(t)
	c := server(t)
	require.NoError(t, EnsureTopic(ctx, c, "few", 1))
	pr, err := Produce(ctx, ProduceConfig{Client: c, Topic: "few", Records: 2, Clients: 3, RecordBytes: 10})
	require.NoError(t, err)
	assert.Equal(t, int64(2), pr.Records)
	assert.Equal(t, int64(2), pr.Batches, "two clients, one record each: a batch each")
}

func TestDurationRun(t *testing.T) {
	ctx := interoptest.Context(t)
	c := server(t)
	require.NoError(t, EnsureTopic(ctx, c, "dur", 1))
	pr, err := Produce(ctx, ProduceConfig{Client: c, Topic: "dur", Duration: 200 * time.Millisecond, RecordBytes: 10, InFlight: 1})
	require.NoError(t, err)
	assert.Positive(t, pr.Records)
	assert.Zero(t, pr.Errors, "records in flight when the duration ends are waited for, not failed: %s", pr.FirstError)
	cr, err := Consume(ctx, ConsumeConfig{Client: c, Topic: "dur", Records: pr.Records})
	require.NoError(t, err)
	assert.Equal(t, pr.Records, cr.Records)
}

// TestEndToEndSeesOnlyNewRecords: records already in the topic are not read,
// every new one is, and each has an end-to-end latency.
func TestEndToEndSeesOnlyNewRecords(t *testing.T) {
	eachServer(t, testEndToEnd)
}

func testEndToEnd(t *testing.T, c Client) {
	ctx := interoptest.Context(t)
	require.NoError(t, EnsureTopic(ctx, c, "e2e", 3))
	_, err := Produce(ctx, ProduceConfig{Client: c, Topic: "e2e", Records: 100, RecordBytes: 20})
	require.NoError(t, err)
	res, err := EndToEnd(ctx, ProduceConfig{Client: c, Topic: "e2e", Records: 500, RecordBytes: 64, Rate: 5000}, ConsumeConfig{})
	require.NoError(t, err)
	assert.Equal(t, int64(500), res.Produce.Records)
	assert.Equal(t, int64(500), res.Consume.Records)
	assert.Equal(t, int64(500), res.Consume.EndToEnd.Count)
}

func TestUnreachableBrokerCountsErrors(t *testing.T) {
	ctx := interoptest.Context(t)
	c := Client{Brokers: []string{"127.0.0.1:1"}}
	pr, err := Produce(ctx, ProduceConfig{Client: c, Topic: "nowhere", Records: 5, RecordBytes: 10, DeliveryTimeout: time.Second})
	require.NoError(t, err, "a failing broker is a result, not a config error")
	assert.Zero(t, pr.Records)
	assert.Equal(t, int64(5), pr.Errors)
	assert.NotEmpty(t, pr.FirstError)
}

func TestConsumeIdle(t *testing.T) {
	ctx := interoptest.Context(t)
	c := server(t)
	require.NoError(t, EnsureTopic(ctx, c, "empty", 1))
	cr, err := Consume(ctx, ConsumeConfig{Client: c, Topic: "empty", Records: 10, Idle: 300 * time.Millisecond})
	assert.ErrorIs(t, err, ErrIdle)
	assert.Zero(t, cr.Records)
}

func TestEnsureTopic(t *testing.T) {
	ctx := interoptest.Context(t)
	c := server(t)
	require.NoError(t, EnsureTopic(ctx, c, "ens", 3))
	require.NoError(t, EnsureTopic(ctx, c, "ens", 3), "an existing topic with the right layout is fine")
	err := EnsureTopic(ctx, c, "ens", 5)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has 3 partitions, want 5")
	ends, err := EndOffsets(ctx, c, "ens")
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, ends)
}

// TestOpenLoopCountsStallsFromIntendedTime: the broker stalls its first
// produce request. With only 5 records allowed in flight the producer itself
// blocks, so the records due during the stall are sent late; their latency
// must still count from when they were due (no coordinated omission), which
// makes the median long. Timed from the actual send, almost every record
// would look fast. (A lower bound set by the injected stall, which a slow
// machine can only raise.)
func TestOpenLoopCountsStallsFromIntendedTime(t *testing.T) {
	const stall = 400 * time.Millisecond
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "stall"))
	require.NoError(t, err)
	defer cl.Close()
	stalled, produces := false, 0
	cl.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		// The first produce carries the record that primes the client,
		// before the schedule starts; the stall hits the schedule's first.
		if produces++; produces == 2 {
			cl.DropControl()
			stalled = true
			time.Sleep(stall) // the broker's stall, not a wait for a condition
		}
		return nil, nil, false
	})
	pr, err := Produce(interoptest.Context(t), ProduceConfig{
		Client: Client{Brokers: cl.ListenAddrs()}, Topic: "stall",
		Records: 400, RecordBytes: 20, Rate: 1000, InFlight: 5,
	})
	require.NoError(t, err)
	require.True(t, stalled)
	assert.Equal(t, int64(400), pr.Records)
	// Records 1..399 are due at 0..398 ms after the priming record's answer
	// and none is acknowledged before the stall ends at 400 ms or later:
	// the median waited at least ~200 ms.
	assert.GreaterOrEqual(t, pr.Latency.P50, stall/2-50*time.Millisecond, "p50 %v", pr.Latency.P50)
	assert.GreaterOrEqual(t, pr.Latency.Max, stall-50*time.Millisecond, "max %v", pr.Latency.Max)
}
