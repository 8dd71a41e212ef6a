package clusterinterop

import (
	"context"
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
		var recs int64
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte("copy-" + string(r.Value))}, nil)
			recs++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
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
