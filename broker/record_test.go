package broker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var recordSeeds = flag.Bool("record-seeds", false, "record real client requests into testdata/fuzz as seed corpora")

// TestRecordSeeds records the requests franz-go and sarama send through a
// capturing listener and writes them as the seed corpora of FuzzDispatch
// (frames without their length) and FuzzReadFrame (with it). It runs only
// with -record-seeds; the committed seeds run in every normal test run.
//
//	go test ./broker -run TestRecordSeeds -record-seeds
func TestRecordSeeds(t *testing.T) {
	if !*recordSeeds {
		t.Skip("records seeds only with -record-seeds")
	}
	rec := &recorder{seen: map[string]int{}}
	s := newFuzzServer(t)
	s.cfg.AutoCreate = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.cfg.AdvertisedAddr = ln.Addr().String()
	go func() { _ = s.Serve(&captureListener{Listener: ln, rec: rec}) }()
	addr := ln.Addr().String()

	recordFranz(t, addr)
	recordSarama(t, addr)
	require.NoError(t, rec.write("testdata/fuzz"))
	t.Logf("recorded %d frames", len(rec.frames))
}

func recordFranz(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("seed"), kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		// One request per codec: the records go together in one batch.
		var recs []*kgo.Record
		for i := range 5 {
			recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i), Partition: 0})
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		cl.Close()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("seed"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	for n := 0; n < 25; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		n += len(fs.Records())
	}
	cl.Close()

	// A group member: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
	// OffsetCommit, OffsetFetch, LeaveGroup.
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("seed"), kgo.ConsumerGroup("seed-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	for n := 0; n < 25; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		n += len(fs.Records())
	}
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	adm := kadm.NewClient(cl)
	_, err = adm.DescribeGroups(ctx, "seed-group")
	require.NoError(t, err)
	_, err = adm.ListGroups(ctx)
	require.NoError(t, err)
	_, err = adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, "seed-admin-new")
	require.NoError(t, err)
	_, err = adm.DescribeTopicConfigs(ctx, "seed-admin-new")
	require.NoError(t, err)
	_, err = adm.UpdatePartitions(ctx, 4, "seed-admin-new")
	require.NoError(t, err)
	_, err = adm.ListEndOffsets(ctx, "seed")
	require.NoError(t, err)
	_, err = adm.ListStartOffsets(ctx, "seed")
	require.NoError(t, err)
	_, err = adm.ListOffsetsAfterMilli(ctx, 0, "seed")
	require.NoError(t, err)
	_, err = adm.DeleteTopics(ctx, "seed-admin-new")
	require.NoError(t, err)
	cl.Close()
}

func recordSarama(t *testing.T, addr string) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionZSTD} {
		cfg.Producer.Compression = codec
		p, err := sarama.NewSyncProducer([]string{addr}, cfg)
		require.NoError(t, err)
		for i := range 3 {
			_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "seed-sarama", Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
			require.NoError(t, err)
		}
		require.NoError(t, p.Close())
	}
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	require.NoError(t, err)
	pc, err := c.ConsumePartition("seed-sarama", 0, sarama.OffsetOldest)
	require.NoError(t, err)
	select {
	case <-pc.Messages():
	case <-time.After(30 * time.Second):
		t.Fatal("sarama consumed nothing")
	}
	require.NoError(t, pc.Close())
	require.NoError(t, c.Close())
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	require.NoError(t, err)
	require.NoError(t, adm.CreateTopic("seed-sarama-new", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false))
	_, err = adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "seed-sarama-new"})
	require.NoError(t, err)
	require.NoError(t, adm.CreatePartitions("seed-sarama-new", 3, nil, false))
	require.NoError(t, adm.DeleteTopic("seed-sarama-new"))
	require.NoError(t, adm.Close())
}

// recorder keeps the request frames it sees, at most a few per API key,
// version and client.
type recorder struct {
	mu     sync.Mutex
	seen   map[string]int
	frames [][]byte
}

const seedsPerVersion = 6

func (r *recorder) add(frame []byte) {
	if len(frame) < 4 {
		return
	}
	// Per client (the client id follows the fixed header), so both
	// clients' encodings are kept.
	kv := fmt.Sprintf("%d-%d", binary.BigEndian.Uint16(frame), binary.BigEndian.Uint16(frame[2:]))
	if h, _, err := parseHeaderPrefix(frame); err == nil {
		kv += "-" + h.clientID
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[kv] >= seedsPerVersion || len(frame) > 64<<10 {
		return
	}
	r.seen[kv]++
	r.frames = append(r.frames, append([]byte(nil), frame...))
}

// write stores the frames in Go's fuzz corpus format.
func (r *recorder) write(dir string) error {
	for _, target := range []string{"FuzzDispatch", "FuzzReadFrame"} {
		d := filepath.Join(dir, target)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for _, f := range r.frames {
			data := f
			if target == "FuzzReadFrame" {
				data = append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...)
			}
			sum := sha256.Sum256(data)
			name := fmt.Sprintf("recorded-%d-%d-%x", binary.BigEndian.Uint16(f), binary.BigEndian.Uint16(f[2:]), sum[:6])
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
			if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// captureListener hands the recorder every request frame its connections
// read.
type captureListener struct {
	net.Listener
	rec *recorder
}

func (l *captureListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &captureConn{Conn: c, rec: l.rec}, nil
}

type captureConn struct {
	net.Conn
	rec *recorder
	buf []byte
}

func (c *captureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.buf = append(c.buf, p[:n]...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.rec.add(c.buf[4 : 4+size])
		c.buf = c.buf[4+size:]
	}
	return n, err
}
