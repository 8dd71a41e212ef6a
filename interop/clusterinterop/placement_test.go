package clusterinterop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPlacementAndRouting: on a three-broker cluster, a topic of RF 1
// spreads its leaders over the brokers and one of RF 3 has three replicas
// in sync; franz-go, sarama and kcat, each seeded with a single broker,
// produce to and consume from both through whichever broker they reach
// first.
func TestPlacementAndRouting(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			c := startCluster(t, 3, eng)
			c.createTopic("one", 6, 1, nil)
			c.createTopic("three", 3, 3, nil)

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			m, err := c.metadata(ctx, "one", "three")
			require.NoError(t, err)
			leaders := map[int32]int{}
			for _, p := range m.Topics["one"].Partitions {
				require.Len(t, p.Replicas, 1)
				leaders[p.Leader]++
			}
			assert.Len(t, leaders, 3, "RF 1 leaders on every broker: %v", leaders)
			for _, p := range m.Topics["three"].Partitions {
				r := slices.Clone(p.Replicas)
				slices.Sort(r)
				assert.Equal(t, []int32{1, 2, 3}, r, "partition %d", p.Partition)
				assert.Len(t, p.ISR, 3, "partition %d in sync", p.Partition)
			}

			for _, topic := range []string{"one", "three"} {
				t.Run(topic, func(t *testing.T) {
					franzRoundTrip(t, c.node(1).Addr, c.node(2).Addr, topic)
					saramaRoundTrip(t, c.node(2).Addr, c.node(3).Addr, topic)
					kcatRoundTrip(t, c.node(3).Addr, c.node(1).Addr, topic)
				})
			}
		})
	}
}

func franzRoundTrip(t *testing.T, produceVia, consumeVia, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(produceVia), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer p.Close()
	var want []string
	for i := range 60 {
		v := fmt.Sprintf("franz-%s-%d", topic, i)
		want = append(want, v)
		p.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) { require.NoError(t, err) })
	}
	require.NoError(t, p.Flush(ctx))
	got := consumeValues(t, consumeVia, topic, "franz-", len(want))
	assert.ElementsMatch(t, want, got)
}

// consumeValues reads topic from the beginning through seed until it has
// n values starting with prefix.
func consumeValues(t *testing.T, seed, topic, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d", len(got), n)
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), prefix) {
				got = append(got, string(r.Value))
			}
		})
	}
	return got
}

func saramaRoundTrip(t *testing.T, produceVia, consumeVia, topic string) {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 20
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{produceVia}, cfg)
	require.NoError(t, err)
	defer prod.Close()
	var want []string
	for i := range 30 {
		v := fmt.Sprintf("sarama-%s-%d", topic, i)
		want = append(want, v)
		_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(v), Value: sarama.StringEncoder(v)})
		require.NoError(t, err)
	}
	cons, err := sarama.NewConsumer([]string{consumeVia}, cfg)
	require.NoError(t, err)
	defer cons.Close()
	parts, err := cons.Partitions(topic)
	require.NoError(t, err)
	var got []string
	deadline := time.After(60 * time.Second)
	for _, p := range parts {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		require.NoError(t, err)
		hw := pc.HighWaterMarkOffset()
		for read := int64(0); read < hw; read++ {
			select {
			case m := <-pc.Messages():
				if strings.HasPrefix(string(m.Value), "sarama-") {
					got = append(got, string(m.Value))
				}
				read = m.Offset
			case <-deadline:
				t.Fatalf("sarama consumed %d of %d", len(got), len(want))
			}
		}
		pc.Close()
	}
	assert.ElementsMatch(t, want, got)
}

func kcatRoundTrip(t *testing.T, produceVia, consumeVia, topic string) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	var in bytes.Buffer
	var want []string
	for i := range 40 {
		v := fmt.Sprintf("kcat-%s-%d", topic, i)
		want = append(want, v)
		fmt.Fprintf(&in, "%s:%s\n", v, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, kcat, "-b", produceVia, "-P", "-t", topic, "-K:", "-X", "acks=all")
	prod.Stdin = &in
	out, err := prod.CombinedOutput()
	require.NoError(t, err, "kcat produce: %s", out)
	cons := exec.CommandContext(ctx, kcat, "-b", consumeVia, "-C", "-t", topic, "-e", "-q", "-f", "%s\n")
	out, err = cons.Output()
	require.NoError(t, err, "kcat consume")
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "kcat-") {
			got = append(got, line)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
}
