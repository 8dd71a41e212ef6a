package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/cluster"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// onSegment runs the brokers on the segment engine, whose replicas are
// directories that a removal must delete.
var onSegment = brokertest.Configure(func(c *broker.Config) { c.Engine = "segment" })

// createAssignedAll creates topic with one partition per assignment.
func createAssignedAll(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, assignment ...[]int32) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	}
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10000
	cr, err := create.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, cr.Topics[0].ErrorCode, "%v", cr.Topics[0].ErrorMessage)
}

// spreadProducer produces numbered records round robin over a topic's
// partitions with an idempotent acks=all franz-go producer, one at a time,
// until stopped, and keeps the longest wait between two acknowledgements.
type spreadProducer struct {
	mu      sync.Mutex
	acked   []int
	last    time.Time
	longest time.Duration
	stop    chan struct{}
	done    chan struct{}
}

func startSpreadProducer(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string) *spreadProducer {
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		// A leader moves when the one removed led, or to the first replica
		// of the target: the client looks it up at once, not 5 s later.
		kgo.MetadataMinAge(50*time.Millisecond))
	p := &spreadProducer{stop: make(chan struct{}), done: make(chan struct{}), last: time.Now()}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err == nil {
				p.mu.Lock()
				p.acked = append(p.acked, i)
				now := time.Now()
				p.longest = max(p.longest, now.Sub(p.last))
				p.last = now
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *spreadProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops the producer and returns the numbers acknowledged and the
// longest wait between two acknowledgements.
func (p *spreadProducer) finish() ([]int, time.Duration) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked), p.longest
}

// prefillBase numbers the records prefillNumbered writes, apart from the
// producer's.
const prefillBase = 1_000_000

// prefillNumbered produces n records numbered from first, each padded to
// size bytes, round robin over topic's partitions with acks=all, and
// returns their numbers.
func prefillNumbered(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, first, n, size int) []int {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	pad := strings.Repeat("x", size)
	recs := make([]*kgo.Record, n)
	nums := make([]int, n)
	for i := range recs {
		nums[i] = first + i
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "%d %s", first+i, pad)}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	return nums
}

// consumeEvery reads every partition of topic from its start to its end
// and returns the numbers read, in no particular order across partitions.
func consumeEvery(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string) []int {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ends, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	want := int64(0)
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		require.NoError(t, o.Err)
		want += o.Offset
		from[o.Partition] = kgo.NewOffset().AtStart()
	})
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))
	var got []int
	for int64(len(got)) < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(got), want)
		fs.EachRecord(func(r *kgo.Record) {
			var n int
			_, err := fmt.Sscanf(string(r.Value), "%d", &n)
			require.NoError(t, err)
			got = append(got, n)
		})
	}
	return got
}

// requireReplicasEverywhere waits until every running node's metadata has
// each partition of topic on want, with no reassignment in progress.
func requireReplicasEverywhere(t *testing.T, c *brokertest.Cluster, topic string, want [][]int32) {
	t.Helper()
	for _, nd := range c.Nodes {
		if nd.Server == nil {
			continue
		}
		require.Eventually(t, func() bool {
			tp, ok := nd.Server.Metadata().Topic(topic)
			if !ok || len(tp.Partitions) != len(want) {
				return false
			}
			for i, p := range tp.Partitions {
				if !slices.Equal(p.Replicas, want[i]) || p.Reassigning() || p.Leader == cluster.NoLeader {
					return false
				}
			}
			return true
		}, 30*time.Second, 10*time.Millisecond, "broker %d's metadata has %s on %v", nd.Config.NodeID, topic, want)
	}
}

// replicaDirs are the directories of topic's replicas under node's data
// directory, those being deleted included.
func replicaDirs(t *testing.T, nd *brokertest.Node, topic string) []string {
	t.Helper()
	tp, ok := nd.Server.Metadata().Topic(topic)
	require.True(t, ok)
	entries, err := os.ReadDir(filepath.Join(nd.Config.Dir, "partitions"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("%x-", tp.ID[:])) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Every partition of a topic on brokers 1-3 moves onto 2, 3 and 4 (a
// broker that held none) through kadm while an idempotent acks=all
// producer runs: the moves complete, every broker's metadata shows the new
// replicas, nothing acknowledged is lost, nothing is stored twice, and
// broker 1 has deleted its replicas.
func TestReassignOntoNewBroker(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, onSegment)
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	const topic = "mv"
	createAssignedAll(ctx, t, cl, topic, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2})
	requireReplicasEverywhere(t, c, topic, [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	require.Eventually(t, func() bool { return len(replicaDirs(t, c.Node(1), topic)) == 3 }, 30*time.Second, 10*time.Millisecond,
		"broker 1 holds every partition")

	// Megabytes on each partition, so that the new replica catches up over
	// many fetches while the producer goes on.
	prefill := prefillNumbered(ctx, t, c, topic, prefillBase, 3000, 1024)
	prod := startSpreadProducer(ctx, t, c, topic)
	require.Eventually(t, func() bool { return prod.count() > 100 }, 30*time.Second, 10*time.Millisecond, "producing before the move")

	var req kadm.AlterPartitionAssignmentsReq
	targets := [][]int32{{2, 3, 4}, {3, 4, 2}, {4, 2, 3}}
	for i, target := range targets {
		req.Assign(topic, int32(i), target)
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	require.Len(t, res[topic], 3)

	// Done when no move is listed any more.
	require.Eventually(t, func() bool {
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
		return err == nil && len(ls[topic]) == 0
	}, 30*time.Second, 20*time.Millisecond, "the reassignments complete")
	requireReplicasEverywhere(t, c, topic, targets)
	meta, err := adm.Metadata(ctx, topic)
	require.NoError(t, err)
	for i, target := range targets {
		p := meta.Topics[topic].Partitions[int32(i)]
		assert.Equal(t, target, p.Replicas, "Metadata of partition %d", i)
		assert.ElementsMatch(t, target, p.ISR, "every replica of partition %d in sync", i)
	}

	n := prod.count()
	require.Eventually(t, func() bool { return prod.count() > n+100 }, 30*time.Second, 10*time.Millisecond, "producing after the move")
	acked, longest := prod.finish()
	t.Logf("%d records acknowledged; longest wait between two acknowledgements %v", len(acked), longest)
	acked = append(acked, prefill...)

	got := consumeEvery(ctx, t, c, topic)
	seen := map[int]int{}
	for _, v := range got {
		seen[v]++
	}
	var lost, dup []int
	for _, v := range acked {
		if seen[v] == 0 {
			lost = append(lost, v)
		}
	}
	for v, k := range seen {
		if k > 1 {
			dup = append(dup, v)
		}
	}
	assert.Empty(t, lost, "acknowledged records lost")
	assert.Empty(t, dup, "records stored twice")

	require.Eventually(t, func() bool { return len(replicaDirs(t, c.Node(1), topic)) == 0 }, 30*time.Second, 10*time.Millisecond,
		"broker 1 deleted its replicas")
	require.Len(t, replicaDirs(t, c.Node(4), topic), 3, "broker 4 holds every partition")
	for _, k := range c.Node(1).Server.Partitions().Keys() {
		tp, _ := c.Node(1).Server.Metadata().Topic(topic)
		assert.NotEqual(t, tp.ID, k.TopicID, "broker 1 still holds %s", k)
	}
}

// A move onto a broker that is down stays in progress and is listed; a
// cancellation takes the partition back to its replicas, and it serves on.
// A target of an unknown broker is refused, and so is a cancellation of
// nothing.
func TestReassignCancel(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, onSegment)
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	const topic = "cx"
	createAssignedAll(ctx, t, cl, topic, []int32{1, 2, 3})
	requireReplicasEverywhere(t, c, topic, [][]int32{{1, 2, 3}})
	produceNumbered(ctx, t, c, topic, 0, 10)
	c.Node(4).Stop(t)

	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign(topic, 0, []int32{1, 2, 9})
	res, err := adm.AlterPartitionAssignments(ctx, bad)
	require.NoError(t, err)
	assert.ErrorIs(t, res[topic][0].Err, kerr.InvalidReplicaAssignment)

	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{1, 2, 4})
	res, err = adm.AlterPartitionAssignments(ctx, move)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	require.Contains(t, ls[topic], int32(0), "listed while 4 is down")
	l := ls[topic][0]
	assert.Equal(t, []int32{1, 2, 4, 3}, l.Replicas)
	assert.Equal(t, []int32{4}, l.AddingReplicas)
	assert.Equal(t, []int32{3}, l.RemovingReplicas)
	for _, id := range []int32{1, 2, 3} {
		require.Eventually(t, func() bool { return partitionOn(t, c, id, topic).Reassigning() }, 30*time.Second, 10*time.Millisecond,
			"broker %d's metadata shows the move", id)
	}

	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign(topic, 0)
	res, err = adm.AlterPartitionAssignments(ctx, cancel)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	ls, err = adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	assert.Empty(t, ls[topic])
	requireReplicasEverywhere(t, c, topic, [][]int32{{1, 2, 3}})

	res, err = adm.AlterPartitionAssignments(ctx, cancel)
	require.NoError(t, err)
	assert.ErrorIs(t, res[topic][0].Err, kerr.NoReassignmentInProgress)

	produceNumbered(ctx, t, c, topic, 10, 10)
	got := consumeEvery(ctx, t, c, topic)
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got)
}

// A move off a broker that is down completes without it (a replica leaving
// need not be in sync), and the broker deletes its replica when it comes
// back and its metadata shows it is no replica any more.
func TestReassignOffStoppedBroker(t *testing.T) {
	c := brokertest.StartClusterOf(t, 4, 3, onSegment)
	ctx := interoptest.Context(t)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	const topic = "off"
	createAssignedAll(ctx, t, cl, topic, []int32{4, 2, 3})
	requireReplicasEverywhere(t, c, topic, [][]int32{{4, 2, 3}})
	produceNumbered(ctx, t, c, topic, 0, 20)
	require.Eventually(t, func() bool { return len(replicaDirs(t, c.Node(4), topic)) == 1 }, 30*time.Second, 10*time.Millisecond)
	c.Node(4).Stop(t)

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{1, 2, 3})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	requireReplicasEverywhere(t, c, topic, [][]int32{{1, 2, 3}})

	c.Node(4).Start(t)
	require.Eventually(t, func() bool { return len(replicaDirs(t, c.Node(4), topic)) == 0 }, 30*time.Second, 10*time.Millisecond,
		"broker 4 deleted the replica it no longer holds")
	produceNumbered(ctx, t, c, topic, 20, 5)
	want := make([]int, 25)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, consumeEvery(ctx, t, c, topic))
}

// A throttled reassignment (KIP-73), each side on its own: with the rate
// at 1 B/s the new replica copies one batch a second, so after two
// seconds it holds part of the log only, is out of the ISR and the move
// is still listed, while the producer goes on being acknowledged (the
// replicas in the ISR are never throttled). Removing the rate lets the
// move complete; nothing acknowledged is lost.
func TestReassignThrottled(t *testing.T) {
	for _, side := range []string{"follower", "leader"} {
		t.Run(side, func(t *testing.T) {
			c := brokertest.StartClusterOf(t, 4, 3, onSegment)
			ctx := interoptest.Context(t)
			cl := c.Client(t)
			adm := kadm.NewClient(cl)
			const topic = "th"
			createAssignedAll(ctx, t, cl, topic, []int32{1, 2, 3})
			requireReplicasEverywhere(t, c, topic, [][]int32{{1, 2, 3}})
			// Small batches, so that one batch a second is a small share.
			fill := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(8<<10),
				kgo.ProducerBatchCompression(kgo.NoCompression())) // a throttle counts bytes as stored
			const prefill = 2000
			pad := strings.Repeat("x", 1024)
			var recs []*kgo.Record
			for i := range prefill {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%d %s", prefillBase+i, pad)})
			}
			require.NoError(t, fill.ProduceSync(ctx, recs...).FirstErr())

			rateKey, listKey, brokers, list := cluster.ConfigFollowerThrottledRate, cluster.ConfigFollowerThrottledReplicas, []int32{4}, "0:4"
			if side == "leader" {
				rateKey, listKey, brokers, list = cluster.ConfigLeaderThrottledRate, cluster.ConfigLeaderThrottledReplicas, []int32{1, 2, 3}, "0:1,0:2,0:3"
			}
			setRate := func(v *string) {
				op := kadm.SetConfig
				if v == nil {
					op = kadm.DeleteConfig
				}
				rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: rateKey, Value: v}}, brokers...)
				require.NoError(t, err)
				for _, r := range rs {
					require.NoError(t, r.Err, "broker %s: %s", r.Name, r.ErrMessage)
				}
			}
			setRate(kmsg.StringPtr("1"))
			rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: listKey, Value: kmsg.StringPtr(list)}}, topic)
			require.NoError(t, err)
			require.NoError(t, rs[0].Err)
			described, err := adm.DescribeBrokerConfigs(ctx, brokers[0])
			require.NoError(t, err)
			rc, err := described.On(fmt.Sprint(brokers[0]), nil)
			require.NoError(t, err)
			idx := slices.IndexFunc(rc.Configs, func(c kadm.Config) bool { return c.Key == rateKey })
			require.GreaterOrEqual(t, idx, 0, "%s described", rateKey)
			assert.Equal(t, "1", *rc.Configs[idx].Value)
			assert.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, rc.Configs[idx].Source)
			for _, id := range []int32{1, 2, 3, 4} {
				require.Eventually(t, func() bool {
					tp, ok := c.Node(id).Server.Metadata().Topic(topic)
					return ok && tp.Config(listKey, "") == list
				}, 10*time.Second, 10*time.Millisecond, "broker %d has the throttled replicas", id)
			}

			prod := startSpreadProducer(ctx, t, c, topic)
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, 0, []int32{2, 3, 4})
			res, err := adm.AlterPartitionAssignments(ctx, req)
			require.NoError(t, err)
			require.NoError(t, res.Error())
			n := prod.count()
			time.Sleep(2 * time.Second)
			require.Greater(t, prod.count(), n, "acknowledged during the throttled move")
			ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
			require.NoError(t, err)
			require.Contains(t, ls[topic], int32(0), "still moving")
			assert.NotContains(t, partitionOn(t, c, 1, topic).ISR, int32(4))
			end := replicaEnd(t, c.Node(4), topic)
			// Unthrottled, two fetches of 1 MiB copy it all within milliseconds;
			// throttled, a batch a second (and at most one fetch before the
			// quota's first sample).
			assert.Less(t, end, int64(prefill), "the new replica copied %d records in 2 s at 1 B/s", end)
			t.Logf("the new replica holds %d of %d records after 2 s", end, prefill)

			setRate(nil)
			require.Eventually(t, func() bool {
				ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
				return err == nil && len(ls[topic]) == 0
			}, 30*time.Second, 20*time.Millisecond, "the move completes once unthrottled")
			requireReplicasEverywhere(t, c, topic, [][]int32{{2, 3, 4}})
			acked, _ := prod.finish()
			for i := range prefill {
				acked = append(acked, prefillBase+i)
			}
			seen := map[int]int{}
			for _, v := range consumeEvery(ctx, t, c, topic) {
				seen[v]++
			}
			for _, v := range acked {
				if seen[v] != 1 {
					t.Errorf("record %d read %d times", v, seen[v])
				}
			}
		})
	}
}

// replicaEnd is the end offset of partition 0 of topic on node's replica.
func replicaEnd(t *testing.T, nd *brokertest.Node, topic string) int64 {
	t.Helper()
	p, err := nd.Server.Partitions().Partition(topic, 0)
	require.NoError(t, err)
	return p.EndOffset()
}
