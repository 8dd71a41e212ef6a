package partition_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engines/memory"
)

// open opens a manager on dir with the named engine and closes it when the
// test ends (unless the test closed it).
func open(t *testing.T, eng, dir string, opts engine.Options) *partition.Manager {
	t.Helper()
	m, err := partition.OpenManager(partition.Config{Dir: dir, Engine: eng, EngineOptions: opts})
	require.NoError(t, err, "open manager (%s) on %s", eng, dir)
	t.Cleanup(func() { m.Close() })
	return m
}

func onePartition(t *testing.T, m *partition.Manager, name string) *partition.Partition {
	t.Helper()
	createTopic(t, m, name, 1, nil)
	p, err := m.Partition(name, 0)
	require.NoError(t, err)
	return p
}

// createTopic makes the manager hold partitions [0, n) of a new topic and
// lead them, as the broker does when the metadata assigns them to it. It
// returns the topic's id, topicID(name).
func createTopic(t *testing.T, m *partition.Manager, name string, n int32, configs map[string]string) uuid.UUID {
	t.Helper()
	return createTopicID(t, m, topicID(name), name, n, configs)
}

// topicID is the id createTopic gives a topic: a function of its name, so
// that a test knows its directory before it exists.
func topicID(name string) uuid.UUID { return uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)) }

// pathOf is the directory of partition index of the topic createTopic made.
func pathOf(dir, name string, index int32, sub ...string) string {
	return filepath.Join(append([]string{dir, "partitions", partition.Key{TopicID: topicID(name), Index: index}.Dir()}, sub...)...)
}

func createTopicID(t *testing.T, m *partition.Manager, id uuid.UUID, name string, n int32, configs map[string]string) uuid.UUID {
	t.Helper()
	for i := range n {
		p, err := m.Ensure(partition.Spec{Topic: name, TopicID: id, Index: i, Configs: configs})
		require.NoError(t, err)
		leadAlone(t, p)
	}
	return id
}

// lead makes the manager lead partitions [0, n) of topic (after a restart,
// the broker does once the metadata says so).
func lead(t *testing.T, m *partition.Manager, topic string, n int32) {
	t.Helper()
	for i := range n {
		p, err := m.Partition(topic, i)
		require.NoError(t, err)
		leadAlone(t, p)
	}
}

// leadAlone makes p led by broker 1, its only replica, as the metadata of a
// one-node cluster says.
func leadAlone(t testing.TB, p *partition.Partition) {
	t.Helper()
	_, err := p.SetState(partition.ReplicaState{
		Self: 1, BrokerEpoch: 1, Lead: true, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1, Now: time.Now(),
	})
	require.NoError(t, err)
}

// removeTopic removes partitions [0, n) of topic id.
func removeTopic(t *testing.T, m *partition.Manager, id uuid.UUID, n int32) {
	t.Helper()
	for i := range n {
		require.NoError(t, m.Remove(partition.Key{TopicID: id, Index: i}))
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readAll reads the partition from offset to the high watermark.
func readAll(t *testing.T, p *partition.Partition, from int64) []batchtest.Record {
	t.Helper()
	var out []batchtest.Record
	for off := from; off < p.HighWatermark(); {
		r, err := p.Read(off, 1<<20)
		require.NoError(t, err)
		if len(r.Records) == 0 {
			break
		}
		recs := batchtest.MustDecode(t, r.Records)
		out = append(out, recs...)
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

func TestAppendAssignsOffsetsAndPatches(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	ctx := ctxT(t)
	var want [][]byte
	for i, n := range []int{3, 1, 5} {
		b := batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("r", n), Codec: batch.Codec(i + 1)})
		want = append(want, batchtest.Values("r", n)...)
		app, err := p.Append(b)
		require.NoError(t, err)
		assert.Equal(t, int64(-1), app.LogAppendTime)
		assert.False(t, app.Duplicate)
		require.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
	}
	assert.Equal(t, int64(9), p.EndOffset())
	assert.Equal(t, int64(9), p.HighWatermark())

	r, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	parts, err := batch.Split(r.Records)
	require.NoError(t, err)
	require.Len(t, parts, 3)
	for i, base := range []int64{0, 3, 4} {
		h, err := batch.Parse(parts[i])
		require.NoError(t, err, "stored batches are returned exactly as stored and still valid")
		assert.Equal(t, base, h.BaseOffset)
		assert.Equal(t, int32(0), h.PartitionLeaderEpoch)
		assert.Equal(t, batch.Codec(i+1), h.Attributes.Codec(), "compressed batches pass through")
	}
	recs := readAll(t, p, 0)
	require.Len(t, recs, 9)
	for i, r := range recs {
		assert.Equal(t, int64(i), r.Offset)
		assert.Equal(t, want[i], r.Value)
	}
}

func TestAppendRejects(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	createTopic(t, m, "small", 1, map[string]string{cluster.ConfigMaxMessageBytes: "200"})
	p, err := m.Partition("small", 0)
	require.NoError(t, err)

	good := batchtest.Plain(t, 2)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	wrongCount := bytes.Clone(good)
	wrongCount[60] = 3
	batchtest.Recrc(wrongCount)
	magic1 := bytes.Clone(good)
	magic1[16] = 1
	cases := []struct {
		name string
		in   []byte
		want *kerr.Error
	}{
		{"bad CRC", flipped, kerr.CorruptMessage},
		{"wrong count", wrongCount, kerr.CorruptMessage},
		{"magic 1", magic1, kerr.InvalidRecord},
		{"lying length", good[:len(good)-1], kerr.CorruptMessage},
		{"empty", nil, kerr.InvalidRecord},
		{"too large", batchtest.Make(t, batchtest.Spec{Values: [][]byte{make([]byte, 300)}}), kerr.MessageTooLarge},
		{"transactional without a producer id", batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("x", 1), ExtraAttributes: 0x10}), kerr.InvalidRecord},
		{"control", batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("x", 1), ExtraAttributes: 0x30,
			Idempotent: true, ProducerID: 1}), kerr.InvalidRecord},
		{"two batches, one idempotent", append(batchtest.Plain(t, 1), batchtest.Idempotent(t, 1, 0, 0, 1)...), kerr.InvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Append(c.in)
			assert.ErrorIs(t, err, c.want, "error %v", err)
			assert.Equal(t, int64(0), p.EndOffset(), "nothing stored")
		})
	}
	app, err := p.Append(append(batchtest.Plain(t, 1), batchtest.Plain(t, 2)...))
	require.NoError(t, err, "several plain batches in one produce")
	assert.Equal(t, int64(0), app.BaseOffset)
	assert.Equal(t, int64(2), app.LastOffset)
}

func TestReadBounds(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	p := onePartition(t, m, "t")
	for i := 0; i < 4; i++ {
		app, err := p.Append(batchtest.Plain(t, 10))
		require.NoError(t, err)
		require.NoError(t, p.WaitHighWatermark(ctxT(t), app.LastOffset+1))
	}
	r, err := p.Read(40, 100)
	require.NoError(t, err, "reading at the end is a consumer at the tail")
	assert.NotNil(t, r.Records, "an empty read is an empty record set, not a null one")
	assert.Empty(t, r.Records)
	assert.Equal(t, int64(40), r.HighWatermark)
	assert.Equal(t, int64(40), r.LastStableOffset)
	_, err = p.Read(41, 100)
	assert.ErrorIs(t, err, kerr.OffsetOutOfRange)
	_, err = p.Read(-1, 100)
	assert.ErrorIs(t, err, kerr.OffsetOutOfRange)

	r, err = p.Read(15, 1)
	require.NoError(t, err)
	recs := batchtest.MustDecode(t, r.Records)
	require.Len(t, recs, 10, "at least one whole batch, from the one holding the offset")
	assert.Equal(t, int64(10), recs[0].Offset)
}

func TestConcurrentAppendersAndReaders(t *testing.T) {
	for _, eng := range append([]string{memory.Name}, durableEngines...) {
		t.Run(eng, func(t *testing.T) { concurrentAppendersAndReaders(t, eng) })
	}
}

// concurrentAppendersAndReaders runs idempotent producers (each its own
// producer id, acks=all) against a tailing consumer on one partition.
func concurrentAppendersAndReaders(t *testing.T, eng string) {
	m := open(t, eng, t.TempDir(), engine.Options{Sync: engine.SyncAlways})
	p := onePartition(t, m, "t")
	ctx := ctxT(t)
	const writers, perWriter = 4, 40
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, epoch := int64(100+w), int16(0)
			for i := 0; i < perWriter; i++ {
				app, err := p.Append(batchtest.Idempotent(t, id, epoch, int32(i*2), 2))
				if !assert.NoError(t, err) || !assert.False(t, app.Duplicate) {
					return
				}
				assert.NoError(t, p.WaitHighWatermark(ctx, app.LastOffset+1))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var off int64
		for off < writers*perWriter*2 {
			if err := p.WaitForData(ctx, off); !assert.NoError(t, err) {
				return
			}
			r, err := p.Read(off, 1<<20)
			if !assert.NoError(t, err) {
				return
			}
			recs, err := batchtest.Decode(r.Records)
			if !assert.NoError(t, err) {
				return
			}
			for _, rec := range recs {
				if !assert.Equal(t, off, rec.Offset, "records arrive in offset order without gaps") {
					return
				}
				off++
			}
		}
	}()
	wg.Wait()
	<-done
	assert.Equal(t, int64(writers*perWriter*2), p.HighWatermark())
	assert.Equal(t, writers, p.ProducerState().Len())
}

func TestDeleteDuringAppends(t *testing.T) {
	m := open(t, memory.Name, t.TempDir(), engine.Options{})
	id := createTopic(t, m, "t", 2, nil)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for w := int32(0); w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p, err := m.Partition("t", w%2)
				if err != nil {
					assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
					return
				}
				app, err := p.Append(batchtest.Plain(t, 1))
				if err != nil {
					assert.ErrorIs(t, err, kerr.NotLeaderForPartition)
					return
				}
				if err := p.WaitHighWatermark(ctx, app.LastOffset+1); err != nil {
					assert.ErrorIs(t, err, kerr.NotLeaderForPartition)
					return
				}
			}
		}()
	}
	removeTopic(t, m, id, 2)
	wg.Wait()
	_, err := m.Partition("t", 0)
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
}
