package clusterinterop

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExactlyOnceUnderKill: a consume-transform-produce loop on franz-go's
// GroupTransactSession (what a Java application with transactions does)
// copies an input topic to an output topic while its transaction
// coordinator's broker is killed with SIGKILL and started again, then the
// leader of an output partition, then the group coordinator's. Every input
// record must come out exactly once for a read_committed consumer, and the
// group's committed offsets must cover the input.
func TestExactlyOnceUnderKill(t *testing.T) {
	for _, engine := range durableEngines {
		t.Run(engine, func(t *testing.T) { exactlyOnceUnderKill(t, engine) })
	}
}

func exactlyOnceUnderKill(t *testing.T, engine string) {
	const n = 3000
	c := startCluster(t, 3, engine, "-sync=always")
	c.createTopic("in", 3, 3, nil)
	c.createTopic("out", 3, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// The input arrives over about ten seconds, while the brokers are
	// killed, and the loop copies it as it comes, 50 records a transaction.
	src := c.client(kgo.DefaultProduceTopic("in"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produced := make(chan error, 1)
	go func() {
		for i := range n {
			src.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}, nil)
			if i%100 == 99 {
				time.Sleep(300 * time.Millisecond)
			}
		}
		produced <- src.Flush(ctx)
	}()

	var copied atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- copyExactlyOnce(ctx, c, stop, &copied) }()

	cl := c.client()
	adm := kadm.NewClient(cl)
	waitCopied := func(at int64) {
		for copied.Load() < at {
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Millisecond):
			}
			require.NoError(t, ctx.Err(), "copied %d of %d", copied.Load(), n)
		}
	}
	kill := func(what string, id int32) {
		t.Logf("%s: killing broker %d", what, id)
		nd := c.Node(id)
		c.kill(nd)
		time.Sleep(500 * time.Millisecond) // let the loop run into it
		c.start(nd)
	}
	waitCopied(n / 4)
	kill("transaction coordinator", coordinatorOf(t, ctx, cl, "eos-copy", 1))
	waitCopied(n / 2)
	td := c.waitLeaders("out", 30*time.Second)
	kill("leader of out/0", td.Partitions[0].Leader)
	waitCopied(3 * n / 4)
	kill("group coordinator", coordinatorOf(t, ctx, cl, "eos-group", 0))
	require.NoError(t, <-produced)

	// Done once the group's committed offsets cover the input.
	require.Eventually(t, func() bool {
		offs, err := adm.FetchOffsets(ctx, "eos-group")
		if err != nil {
			return false
		}
		var total int64
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == n
	}, 2*time.Minute, 100*time.Millisecond, "the group's offsets never covered the input (copied %d)", copied.Load())
	close(stop)
	require.NoError(t, <-done)

	out := c.client(kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	total := 0
	for total < n {
		pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
		fs := out.PollFetches(pctx)
		if pctx.Err() != nil {
			logOutState(t, adm)
			dumpOut(t, cl, seen)
			var miss []int
			for i := range n {
				if seen["copy-"+strconv.Itoa(i)] == 0 {
					miss = append(miss, i)
				}
			}
			t.Logf("missing: %v", miss)
		}
		require.NoError(t, pctx.Err(), "read %d of %d from out", total, n)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			total++
		})
	}
	var dups []string
	for i := range n {
		v := "copy-" + strconv.Itoa(i)
		if seen[v] != 1 {
			dups = append(dups, fmt.Sprintf("%s x%d", v, seen[v]))
		}
	}
	assert.Empty(t, dups, "records not copied exactly once")
	assert.Equal(t, n, total)
}

// copyExactlyOnce copies "in" to "out" in transactions until stop.
func copyExactlyOnce(ctx context.Context, c *cluster, stop <-chan struct{}, copied *atomic.Int64) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("eos-copy"), kgo.ConsumerGroup("eos-group"),
		kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.TransactionTimeout(10*time.Second), kgo.RetryTimeout(time.Minute),
	)
	if err != nil {
		return err
	}
	defer sess.Close()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollRecords(pctx, 50)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		// As franz-go's session asks: a transaction with a record that
		// failed is aborted, and its input read again.
		var recs int64
		var failed atomic.Bool
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte("copy-" + string(r.Value))}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(true)
				}
			})
			recs++
		})
		if err := sess.Client().Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		committed, err := sess.End(ctx, kgo.TransactionEndTry(!failed.Load()))
		switch {
		case err != nil && strings.Contains(err.Error(), "fatal"):
			return fmt.Errorf("end: %w", err)
		case committed:
			copied.Add(recs)
		}
	}
}

// coordinatorOf is the broker coordinating key.
func coordinatorOf(t *testing.T, ctx context.Context, cl *kgo.Client, key string, typ int8) int32 {
	t.Helper()
	var id int32 = -1
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = key, typ
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		id = resp.NodeID
		return true
	}, 30*time.Second, 50*time.Millisecond)
	return id
}

// logOutState logs each partition of "out": its end, its last stable
// offset and the producers with a transaction open there.
func logOutState(t *testing.T, adm *kadm.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err1 := adm.ListEndOffsets(ctx, "out")
	stable, err2 := adm.ListCommittedOffsets(ctx, "out")
	t.Logf("out: ends %v (%v), last stable offsets %v (%v)", ends, err1, stable, err2)
	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"out": {0: {}, 1: {}, 2: {}}})
	ps.EachProducer(func(p kadm.DescribedProducer) {
		t.Logf("out/%d: producer %d epoch %d, open transaction from %d", p.Partition, p.ProducerID, p.ProducerEpoch, p.CurrentTxnStartOffset)
	})
	t.Logf("describe producers: %v", err)
}

// dumpOut logs, for each partition of "out", the aborted transactions a
// read_committed fetch returns and every batch's producer, epoch and kind,
// and which values the reader missed.
func dumpOut(t *testing.T, cl *kgo.Client, seen map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx, "out")
	if err != nil {
		t.Logf("out: %v", err)
		return
	}
	for p := int32(0); p < 3; p++ {
		req := kmsg.NewPtrFetchRequest()
		req.IsolationLevel, req.MaxBytes, req.ReplicaID = 1, 50<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "out", td["out"].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 50<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := cl.Broker(int(td["out"].Partitions[p].Leader)).Request(ctx, req)
		if err != nil {
			t.Logf("out/%d: fetch: %v", p, err)
			continue
		}
		fp := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		t.Logf("out/%d: error %d hw %d lso %d aborted %+v", p, fp.ErrorCode, fp.HighWatermark, fp.LastStableOffset, fp.AbortedTransactions)
		for rest := fp.RecordBatches; len(rest) > 61; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(rest); err != nil {
				break
			}
			n := int(b.Length) + 12
			missing, kind := 0, "data"
			if b.Attributes&0x20 != 0 && len(b.Records) > 10 {
				var r kmsg.Record
				l, k := binary.Varint(b.Records)
				if k > 0 && r.ReadFrom(b.Records[:k+int(l)]) == nil && len(r.Key) >= 4 {
					kind = map[byte]string{0: "ABORT", 1: "COMMIT"}[r.Key[3]]
				}
			}
			if b.Attributes&0x20 == 0 {
				recs, _ := kgo.DefaultDecompressor().Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&7))
				for i := int32(0); i < b.NumRecords && len(recs) > 0; i++ {
					var r kmsg.Record
					l, k := binary.Varint(recs)
					if k <= 0 || r.ReadFrom(recs[:k+int(l)]) != nil {
						break
					}
					if seen[string(r.Value)] == 0 {
						missing++
					}
					recs = recs[k+int(l):]
				}
			}
			t.Logf("  out/%d@%d n=%d pid=%d epoch=%d attrs=%#x %s leaderEpoch=%d missing=%d", p, b.FirstOffset, b.NumRecords, b.ProducerID, b.ProducerEpoch, b.Attributes, kind, b.PartitionLeaderEpoch, missing)
			rest = rest[n:]
		}
	}
}
