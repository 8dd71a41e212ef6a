package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/brokertest"
)

// consumeAll reads topic from the start to its end as isolation says.
func consumeIsolated(t *testing.T, b *brokertest.Broker, topic string, isolation kgo.IsolationLevel) []string {
	t.Helper()
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation), kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// transactionVersions runs fn on a broker advertising each
// transaction.version: 1 (clients add partitions with AddPartitionsToTxn)
// and 2 (KIP-890's second part: produce adds them, each end bumps the
// epoch).
func transactionVersions(t *testing.T, fn func(t *testing.T, b *brokertest.Broker)) {
	for _, v := range []int16{-1, 2} {
		name := "transaction.version=2"
		if v < 0 {
			name = "transaction.version=1"
		}
		t.Run(name, func(t *testing.T) {
			fn(t, brokertest.Start(t, brokertest.Configure(func(c *broker.Config) { c.Cluster.TransactionVersion = v })))
		})
	}
}

func TestTxnCommitAndAbort(t *testing.T) {
	transactionVersions(t, func(t *testing.T, b *brokertest.Broker) {
		b.CreateTopic(t, "tx", 2)
		ctx := t.Context()
		pr := b.Client(t, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("tx"))
		for i, commit := range []bool{true, false, true} {
			require.NoError(t, pr.BeginTransaction())
			for j := range 4 {
				pr.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("t%d-r%d", i, j)), Partition: int32(j % 2)}, nil)
			}
			require.NoError(t, pr.Flush(ctx))
			require.NoError(t, pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)), "transaction %d", i)
		}
		committed := consumeIsolated(t, b, "tx", kgo.ReadCommitted())
		assert.ElementsMatch(t, []string{"t0-r0", "t0-r1", "t0-r2", "t0-r3", "t2-r0", "t2-r1", "t2-r2", "t2-r3"}, committed)
		all := consumeIsolated(t, b, "tx", kgo.ReadUncommitted())
		assert.Len(t, all, 12, "read_uncommitted sees the aborted records too")
	})
}

// TestTxnLateWriteRefused: under transaction.version 2 every end bumps the
// epoch, and the partition takes the marker's epoch, so a write of the
// transaction that ended, arriving late, is refused (KIP-890).
func TestTxnLateWriteRefused(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "late", 1)
	ctx := t.Context()
	adm := b.Admin(t)
	pr := b.Client(t, kgo.TransactionalID("late-1"), kgo.DefaultProduceTopic("late"))
	// franz-go opts in to transaction.version 2 once it has seen a
	// broker's features: from its second transaction on.
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr())
	require.NoError(t, pr.EndTransaction(ctx, kgo.TryCommit))
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(ctx, &kgo.Record{Value: []byte("in")}).FirstErr())
	d, err := adm.DescribeTransactions(ctx, "late-1")
	require.NoError(t, err)
	pid, epoch := d["late-1"].ProducerID, d["late-1"].ProducerEpoch
	require.NoError(t, pr.EndTransaction(ctx, kgo.TryCommit))
	// EndTxn answers once the decision is durable; the markers follow. A
	// write arriving before the marker lands is still inside the open
	// transaction at the partition (as in Kafka), so wait for the markers:
	// the late write must then be refused.
	require.Eventually(t, func() bool {
		d, err = adm.DescribeTransactions(ctx, "late-1")
		return err == nil && d["late-1"].State == "CompleteCommit"
	}, 10*time.Second, 5*time.Millisecond, "the markers written")
	assert.Equal(t, epoch+1, d["late-1"].ProducerEpoch, "the end bumped the epoch")

	late := kmsg.NewPtrProduceRequest()
	late.SetVersion(12)
	id := "late-1"
	late.TransactionID, late.Acks, late.TimeoutMillis = &id, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "late"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchtest.Make(t, batchtest.Spec{Values: batchtest.Values("late", 1), Idempotent: true,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 1, ExtraAttributes: 0x10})
	rt.Partitions = append(rt.Partitions, rp)
	late.Topics = append(late.Topics, rt)
	resp, err := late.RequestWith(ctx, pr)
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, resp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, []string{"first", "in"}, consumeIsolated(t, b, "late", kgo.ReadCommitted()))
}

func TestTxnAdminAndLastStableOffset(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "adm", 1)
	ctx := t.Context()
	adm := b.Admin(t)
	pr := b.Client(t, kgo.TransactionalID("adm-1"), kgo.DefaultProduceTopic("adm"))
	// A committed record first, then a transaction left open.
	plain := b.Client(t, kgo.DefaultProduceTopic("adm"))
	require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")}).FirstErr())
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr())

	d, err := adm.DescribeTransactions(ctx, "adm-1")
	require.NoError(t, err)
	got := d["adm-1"]
	require.NoError(t, got.Err)
	assert.Equal(t, "Ongoing", got.State)
	assert.Contains(t, got.Topics["adm"], int32(0))
	assert.Positive(t, got.StartTimestamp)

	l, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	require.NoError(t, err)
	assert.Contains(t, l.TransactionalIDs(), "adm-1")
	l, err = adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	require.NoError(t, err)
	assert.NotContains(t, l.TransactionalIDs(), "adm-1")

	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"adm": {0: {}}})
	require.NoError(t, err)
	var open []int64
	ps.EachProducer(func(p kadm.DescribedProducer) { open = append(open, p.CurrentTxnStartOffset) })
	assert.ElementsMatch(t, []int64{-1, 1}, open, "the idempotent producer has none open, the transaction opened at offset 1")

	committed, err := adm.ListCommittedOffsets(ctx, "adm")
	require.NoError(t, err)
	end, err := adm.ListEndOffsets(ctx, "adm")
	require.NoError(t, err)
	lso, _ := committed.Lookup("adm", 0)
	hw, _ := end.Lookup("adm", 0)
	assert.Equal(t, int64(1), lso.Offset, "read_committed ListOffsets answers the last stable offset")
	assert.Equal(t, int64(2), hw.Offset)

	require.NoError(t, pr.EndTransaction(ctx, kgo.TryCommit))
	require.Eventually(t, func() bool {
		d, err := adm.DescribeTransactions(ctx, "adm-1")
		return err == nil && d["adm-1"].State == "CompleteCommit"
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"plain", "open"}, consumeIsolated(t, b, "adm", kgo.ReadCommitted()))
}

func TestTxnTimeoutAbortsAndFences(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "slow", 1)
	ctx := t.Context()
	adm := b.Admin(t)
	pr := b.Client(t, kgo.TransactionalID("slow-1"), kgo.DefaultProduceTopic("slow"),
		kgo.TransactionTimeout(time.Second))
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(ctx, &kgo.Record{Value: []byte("abandoned")}).FirstErr())
	require.Eventually(t, func() bool {
		d, err := adm.DescribeTransactions(ctx, "slow-1")
		return err == nil && d["slow-1"].State == "CompleteAbort"
	}, 15*time.Second, 50*time.Millisecond, "the coordinator aborts a transaction past its timeout")
	assert.Error(t, pr.EndTransaction(ctx, kgo.TryCommit), "the producer was fenced by the abort")
	assert.Empty(t, consumeIsolated(t, b, "slow", kgo.ReadCommitted()))

	tooLong := b.Client(t, kgo.TransactionalID("slow-2"), kgo.TransactionTimeout(time.Hour))
	err := tooLong.BeginTransaction()
	if err == nil {
		err = tooLong.ProduceSync(ctx, &kgo.Record{Topic: "slow", Value: []byte("x")}).FirstErr()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), kerr.InvalidTransactionTimeout.Message, "a timeout above transaction.max.timeout.ms")
}

func TestTxnNewInstanceFencesOld(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "fence", 1)
	ctx := t.Context()
	old := b.Client(t, kgo.TransactionalID("zombie"), kgo.DefaultProduceTopic("fence"))
	require.NoError(t, old.BeginTransaction())
	require.NoError(t, old.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr())

	// A second instance of the same transactional id aborts what the first
	// left open and fences it.
	cur := b.Client(t, kgo.TransactionalID("zombie"), kgo.DefaultProduceTopic("fence"))
	require.NoError(t, cur.BeginTransaction())
	require.NoError(t, cur.ProduceSync(ctx, &kgo.Record{Value: []byte("current")}).FirstErr())
	require.NoError(t, cur.EndTransaction(ctx, kgo.TryCommit))

	err := old.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err)
	assert.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch), "fenced: %v", err)
	assert.Equal(t, []string{"current"}, consumeIsolated(t, b, "fence", kgo.ReadCommitted()))
}

// TestTxnConsumeTransformProduce runs franz-go's GroupTransactSession: the
// output holds every input record once, and the group's offsets move only
// with the transactions that commit.
func TestTxnConsumeTransformProduce(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "in", 2)
	b.CreateTopic(t, "out", 2)
	ctx := t.Context()
	const n = 200
	src := b.Client(t, kgo.DefaultProduceTopic("in"))
	for i := range n {
		src.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
	}
	require.NoError(t, src.Flush(ctx))

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(b.Addr), kgo.TransactionalID("etl"), kgo.ConsumerGroup("etl-group"),
		kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	require.NoError(t, err)
	defer sess.Close()
	seen, aborted := 0, false
	for seen < n {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := sess.PollFetches(pctx)
		require.NoError(t, pctx.Err(), "no progress at %d of %d", seen, n)
		cancel()
		require.NoError(t, sess.Begin())
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, &kgo.Record{Value: append([]byte("out-"), r.Value...)}) })
		for _, r := range recs {
			sess.Produce(ctx, r, nil)
		}
		// The first batch with records is aborted once: it must be read
		// again, and its output never seen.
		commit := kgo.TransactionEndTry(aborted || len(recs) == 0)
		committed, err := sess.End(ctx, commit)
		require.NoError(t, err)
		if len(recs) > 0 && !aborted {
			aborted = true
			assert.False(t, committed)
			continue
		}
		if committed {
			seen += len(recs)
		}
	}
	out := consumeIsolated(t, b, "out", kgo.ReadCommitted())
	assert.Len(t, out, n)
	uniq := map[string]bool{}
	for _, v := range out {
		assert.False(t, uniq[v], "%s twice", v)
		uniq[v] = true
	}
	offs, err := b.Admin(t).FetchOffsets(ctx, "etl-group")
	require.NoError(t, err)
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	assert.Equal(t, int64(n), total, "the group's committed offsets cover the input")
}

// TestTxnBadInput: requests a client should not send get the codes Kafka
// answers, and change nothing.
func TestTxnBadInput(t *testing.T) {
	b := brokertest.Start(t)
	b.CreateTopic(t, "bad", 1)
	ctx := t.Context()
	cl := b.Client(t)
	// A real transactional id, to make the coordinator exist.
	pr := b.Client(t, kgo.TransactionalID("real"), kgo.DefaultProduceTopic("bad"))
	require.NoError(t, pr.BeginTransaction())
	require.NoError(t, pr.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())
	require.NoError(t, pr.EndTransaction(ctx, kgo.TryCommit))
	d, err := b.Admin(t).DescribeTransactions(ctx, "real")
	require.NoError(t, err)
	pid, epoch := d["real"].ProducerID, d["real"].ProducerEpoch

	t.Run("EndTxn of an unknown transactional id", func(t *testing.T) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "never-seen", 77, 0, true
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.InvalidProducerIDMapping.Code, resp.ErrorCode)
	})
	t.Run("TxnOffsetCommit from a fenced epoch", func(t *testing.T) {
		for _, v := range []struct {
			version int16
			want    *kerr.Error
		}{{5, kerr.ProducerFenced}} { // franz-go sends its newest version
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "real", "g", pid, epoch-1, -1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "bad"
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			assert.Equal(t, v.want.Code, resp.Topics[0].Partitions[0].ErrorCode, "v%d", v.version)
		}
	})
	t.Run("AddPartitionsToTxn with an unknown topic", func(t *testing.T) {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "real", pid, epoch
		for _, topic := range []string{"bad", "nope"} {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.OperationNotAttempted.Code, resp.Topics[0].Partitions[0].ErrorCode)
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].Partitions[0].ErrorCode)
	})
	t.Run("a marker for a producer the partition never saw", func(t *testing.T) {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch, mk.Committed = 123456, 0, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "bad", []int32{0}
		mk.Topics = append(mk.Topics, mt)
		req.Markers = append(req.Markers, mk)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Zero(t, resp.Markers[0].Topics[0].Partitions[0].ErrorCode, "written, as Kafka writes it; readers skip markers")
		assert.Equal(t, []string{"x"}, consumeIsolated(t, b, "bad", kgo.ReadCommitted()))
	})
	t.Run("a control batch from a client", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bad"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch.EncodeMarker(batch.Producer{ID: pid, Epoch: epoch}, batch.Marker{Commit: true}, time.Now())
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.InvalidRecord.Code, resp.Topics[0].Partitions[0].ErrorCode)
	})
}
