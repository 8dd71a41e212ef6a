package interop

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

// codecs are Kafka's compression codecs by the names every client uses.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// eachServer runs fn on a fresh server of every target: kfake and the
// broker over each registered engine. Servers run one after another: the
// machine is small and the race detector is on.
func eachServer(t *testing.T, fn func(t *testing.T, s *interoptest.Server)) {
	for _, tg := range interoptest.Targets() {
		t.Run(tg.Name, func(t *testing.T) {
			fn(t, tg.Start(t, 1))
		})
	}
}

// rec is one record as a client produced or consumed it.
type rec struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d key=%q value=%.20q", r.Partition, r.Offset, r.Key, r.Value)
}

// makeRecords returns n records with distinct keys and values of varied
// length; binary values include every byte (newlines and zeros too) unless
// text is set (kcat reads lines).
func makeRecords(seed uint64, n int, text bool) []rec {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
	out := make([]rec, n)
	for i := range out {
		v := make([]byte, 1+rng.IntN(300))
		for j := range v {
			if text {
				v[j] = alphabet[rng.IntN(len(alphabet))]
			} else {
				v[j] = byte(rng.UintN(256))
			}
		}
		out[i] = rec{Key: fmt.Appendf(nil, "key-%d-%d", seed, i), Value: v}
	}
	return out
}

// createTopic creates topic with partitions through franz-go's admin client.
func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopic(interoptest.Context(t), partitions, 1, nil, topic)
	require.NoError(t, err, "create topic %s", topic)
}

// consumeAll reads n records of topic from the start with franz-go.
func consumeAll(t *testing.T, addr, topic string, n int) []rec {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := interoptest.Context(t)
	var got []rec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records of %s", len(got), n, topic)
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		})
	}
	return got
}

// checkSame verifies that got holds exactly the records of want (as the
// producer reported them: partition and offset known), byte for byte, each
// once, and that every partition reads back in produce order.
func checkSame(t *testing.T, want, got []rec) {
	t.Helper()
	byPart := func(rs []rec) map[int32][]rec {
		m := map[int32][]rec{}
		for _, r := range rs {
			m[r.Partition] = append(m[r.Partition], r)
		}
		return m
	}
	wantBy, gotBy := byPart(want), byPart(got)
	assert.Len(t, got, len(want), "record count")
	for p, ws := range wantBy {
		gs := gotBy[p]
		// want is in produce order; a consumer reads a partition in offset
		// order, which must be the same order.
		if !assert.Len(t, gs, len(ws), "partition %d", p) {
			continue
		}
		assert.True(t, slices.IsSortedFunc(gs, func(a, b rec) int { return cmp.Compare(a.Offset, b.Offset) }),
			"partition %d reads back in offset order", p)
		for i := range ws {
			w, g := ws[i], gs[i]
			if w.Offset != g.Offset || !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) {
				t.Errorf("partition %d, record %d: produced %v, consumed %v", p, i, w, g)
				break
			}
		}
	}
	for p := range gotBy {
		if _, ok := wantBy[p]; !ok {
			t.Errorf("records consumed from partition %d that nothing was produced to", p)
		}
	}
}

// spread says how many partitions received records: the tests want records
// across partitions, not all in one.
func spread(rs []rec) int {
	ps := map[int32]bool{}
	for _, r := range rs {
		ps[r.Partition] = true
	}
	return len(ps)
}
