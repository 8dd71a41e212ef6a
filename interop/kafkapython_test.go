package interop

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/interop/interoptest"
)

const kafkaPythonRecords = 200

// kafkaPython finds a Python 3 that imports kafka-python and its codecs.
func kafkaPython(t *testing.T) string {
	return interoptest.Python(t, "kafka, snappy, lz4, zstandard", "python3-kafka python3-snappy python3-lz4 python3-zstandard")
}

// The JSON job and result of testdata/kafka_python.py; keys and values
// travel as hex so that binary records survive.
type (
	pyRecord struct {
		Partition int32  `json:"p"`
		Offset    int64  `json:"o"`
		Key       string `json:"k,omitempty"`
		Value     string `json:"v,omitempty"`
	}
	pyProduce struct {
		Topic   string     `json:"topic"`
		Codec   string     `json:"codec"`
		Records []pyRecord `json:"records"`
	}
	pyConsume struct {
		Topic string `json:"topic"`
		N     int    `json:"n"`
		Group string `json:"group,omitempty"`
	}
	pyJob struct {
		Bootstrap string      `json:"bootstrap"`
		Produce   []pyProduce `json:"produce"`
		Consume   []pyConsume `json:"consume"`
	}
	pyResult struct {
		BrokerVersion []int                 `json:"broker_version"`
		Produced      map[string][]pyRecord `json:"produced"`
		Consumed      map[string][]pyRecord `json:"consumed"`
	}
)

// runKafkaPython runs one job in one interpreter.
func runKafkaPython(t *testing.T, job pyJob) pyResult {
	t.Helper()
	in, err := json.Marshal(job)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kafkaPython(t), "testdata/kafka_python.py")
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "kafka-python\nstderr: %s", errOut.String())
	var res pyResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), "kafka-python output %q", out.String())
	return res
}

func toPy(rs []rec) []pyRecord {
	out := make([]pyRecord, len(rs))
	for i, r := range rs {
		out[i] = pyRecord{Key: hex.EncodeToString(r.Key), Value: hex.EncodeToString(r.Value)}
	}
	return out
}

func fromPy(t *testing.T, ps []pyRecord) []rec {
	t.Helper()
	out := make([]rec, len(ps))
	for i, p := range ps {
		k, err := hex.DecodeString(p.Key)
		require.NoError(t, err)
		v, err := hex.DecodeString(p.Value)
		require.NoError(t, err)
		out[i] = rec{Partition: p.Partition, Offset: p.Offset, Key: k, Value: v}
	}
	return out
}

// TestKafkaPython: kafka-python 2.0.2 (the version Debian ships; no
// idempotent producer) produces keyed records with every codec, each on the
// murmur2 partition Java's client would pick, and franz-go reads them back;
// kafka-python reads franz-go's compressed batches; a kafka-python group
// consumer commits offsets that franz-go's admin client then fetches.
func TestKafkaPython(t *testing.T) {
	kafkaPython(t)
	eachServer(t, func(t *testing.T, s *interoptest.Server) {
		const partitions = 3
		job := pyJob{Bootstrap: s.Addr}
		sent := map[string][]rec{}
		franz := map[string][]rec{}
		for i, codec := range codecs {
			topic, ftopic := "py-"+codec, "py-reads-franz-"+codec
			createTopic(t, s.Addr, topic, partitions)
			createTopic(t, s.Addr, ftopic, partitions)
			sent[topic] = makeRecords(uint64(500+i), kafkaPythonRecords, false)
			job.Produce = append(job.Produce, pyProduce{Topic: topic, Codec: codec, Records: toPy(sent[topic])})
			franz[ftopic] = makeRecords(uint64(600+i), kafkaPythonRecords, false)
			produceFranz(t, s.Addr, ftopic, codec, franz[ftopic])
			job.Consume = append(job.Consume, pyConsume{Topic: ftopic, N: kafkaPythonRecords})
		}
		const group, groupTopic = "py-group", "py-none"
		job.Consume = append(job.Consume, pyConsume{Topic: groupTopic, N: kafkaPythonRecords, Group: group})

		res := runKafkaPython(t, job)
		t.Logf("kafka-python took the broker for Kafka %v", res.BrokerVersion)

		for topic, recs := range sent {
			got := res.Produced[topic]
			require.Len(t, got, len(recs), "kafka-python acknowledged every record of %s", topic)
			for j := range recs {
				recs[j].Partition, recs[j].Offset = got[j].Partition, got[j].Offset
				assert.Equal(t, interoptest.Murmur2Partition(recs[j].Key, partitions), got[j].Partition,
					"%s: record %d on its murmur2 partition", topic, j)
			}
			assert.Equal(t, partitions, spread(recs), "%s: keys spread over every partition", topic)
			checkSame(t, recs, consumeAll(t, s.Addr, topic, len(recs)))
		}
		for topic, recs := range franz {
			checkSame(t, recs, fromPy(t, res.Consumed[topic]))
		}
		checkSame(t, sent[groupTopic], fromPy(t, res.Consumed[groupTopic]))

		// The group's commit is where Kafka's would be: each partition's end.
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr))
		require.NoError(t, err)
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ends, err := adm.ListEndOffsets(interoptest.Context(t), groupTopic)
		require.NoError(t, err)
		committed, err := adm.FetchOffsets(interoptest.Context(t), group)
		require.NoError(t, err)
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := committed.Lookup(groupTopic, o.Partition)
			if assert.True(t, ok, "partition %d has a committed offset", o.Partition) {
				assert.Equal(t, o.Offset, c.At, "partition %d committed at its end", o.Partition)
			}
		})
	})
}
