package clusterinterop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// acked is what the producers were told: a value acknowledged at
// (partition, offset); offset -1 when the client does not say (kcat).
type acked struct {
	partition int32
	offset    int64
}

// load produces to topic until stopped: franz-go's idempotent producer
// with acks=all, and kcat (librdkafka, idempotent, acks=all) in small
// batches, each batch acknowledged when kcat exits 0.
type load struct {
	t     *testing.T
	c     *cluster
	topic string
	stop  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	acked map[string]acked
	order map[int32][]string // franz-go's acknowledged values per partition, in produce order
}

func startLoad(t *testing.T, c *cluster, topic string) *load {
	l := &load{t: t, c: c, topic: topic, stop: make(chan struct{}), acked: map[string]acked{}, order: map[int32][]string{}}
	l.wg.Add(1)
	go l.franz()
	if kcat, err := exec.LookPath("kcat"); err == nil {
		l.wg.Add(1)
		go l.kcat(kcat)
	} else {
		t.Log("kcat is not installed: franz-go alone produces")
	}
	return l
}

func (l *load) franz() {
	defer l.wg.Done()
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.c.seeds()...), kgo.DefaultProduceTopic(l.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second),
		kgo.ProduceRequestTimeout(10*time.Second), kgo.MaxBufferedRecords(2000))
	if err != nil {
		l.t.Error(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	// One goroutine assigns values in order; each partition's acks come back
	// in produce order for an idempotent producer.
	var inflight sync.WaitGroup
	defer func() {
		// Stopping fails what is still buffered (nobody may be there to
		// take it), and each failure reaches its callback.
		cancel()
		cl.Close()
		inflight.Wait()
	}()
	go func() {
		<-l.stop
		cancel()
	}()
	for i := 0; ctx.Err() == nil; i++ {
		v := fmt.Sprintf("franz-%06d", i)
		inflight.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer inflight.Done()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.acked[v] = acked{r.Partition, r.Offset}
			l.order[r.Partition] = append(l.order[r.Partition], v)
			l.mu.Unlock()
		})
		if i%50 == 49 {
			time.Sleep(2 * time.Millisecond) // a steady load, not a flood
		}
	}
}

func (l *load) kcat(kcat string) {
	defer l.wg.Done()
	for b := 0; ; b++ {
		select {
		case <-l.stop:
			return
		default:
		}
		var in bytes.Buffer
		var vals []string
		for i := range 20 {
			v := fmt.Sprintf("kcat-%04d-%02d", b, i)
			vals = append(vals, v)
			fmt.Fprintln(&in, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		go func() {
			select {
			case <-l.stop:
				cancel() // kcat is killed: its batch counts as not acknowledged
			case <-ctx.Done():
			}
		}()
		cmd := exec.CommandContext(ctx, kcat, "-b", strings.Join(l.c.seeds(), ","), "-P", "-t", l.topic,
			"-X", "acks=all", "-X", "enable.idempotence=true", "-X", "message.timeout.ms=50000")
		cmd.Stdin = &in
		out, err := cmd.CombinedOutput()
		stopped := ctx.Err() != nil
		cancel()
		if err == nil && !stopped && !bytes.Contains(out, []byte("Failed to deliver")) {
			l.mu.Lock()
			for _, v := range vals {
				l.acked[v] = acked{-1, -1}
			}
			l.mu.Unlock()
		}
	}
}

// finish stops producing and returns what was acknowledged.
func (l *load) finish() (map[string]acked, map[int32][]string) {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.order
}

// checkLoad consumes topic from the start and checks what the producers
// were told: every acknowledged record is there exactly once, at the
// offset it was acknowledged at, and franz-go's in its produce order per
// partition.
func checkLoad(t *testing.T, c *cluster, topic string, acks map[string]acked, order map[int32][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	adm := c.admin()
	// A restarted leader's high watermark starts from its checkpoint and
	// catches up as its followers fetch: wait until it covers every
	// acknowledged offset (or give up, and report what is missing).
	need := map[int32]int64{}
	for _, a := range acks {
		if a.offset >= need[a.partition] {
			need[a.partition] = a.offset + 1
		}
	}
	var ends kadm.ListedOffsets
	covered := func() bool {
		var err error
		if ends, err = adm.ListEndOffsets(ctx, topic); err != nil {
			return false
		}
		ok := true
		ends.Each(func(o kadmOffset) { ok = ok && o.Err == nil && o.Offset >= need[o.Partition] })
		return ok
	}
	if !assert.Eventually(t, covered, 30*time.Second, 50*time.Millisecond, "the high watermarks cover every acknowledged offset") {
		ends.Each(func(o kadmOffset) {
			t.Logf("partition %d: high watermark %d, acknowledged up to %d", o.Partition, o.Offset, need[o.Partition])
		})
	}
	remaining := 0
	ends.Each(func(o kadmOffset) { remaining += int(o.Offset) })
	seen := map[string]int{}
	at := map[string]acked{}
	byPart := map[int32][]string{}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%d records left to consume", remaining)
		fs.EachRecord(func(r *kgo.Record) {
			remaining--
			v := string(r.Value)
			seen[v]++
			at[v] = acked{r.Partition, r.Offset}
			byPart[r.Partition] = append(byPart[r.Partition], v)
		})
	}
	lost, dup := 0, 0
	for v, a := range acks {
		switch n := seen[v]; {
		case n == 0:
			lost++
			if lost <= 5 {
				t.Errorf("lost-write: %s acknowledged at %d/%d is missing", v, a.partition, a.offset)
			}
		case n > 1:
			dup++
			t.Errorf("duplicate: %s stored %d times", v, n)
		case a.offset >= 0 && at[v] != a:
			t.Errorf("inconsistent-offsets: %s acknowledged at %d/%d, stored at %d/%d", v, a.partition, a.offset, at[v].partition, at[v].offset)
		}
	}
	for p, vals := range order {
		pos := map[string]int{}
		for i, v := range byPart[p] {
			pos[v] = i
		}
		for i := 1; i < len(vals); i++ {
			if pos[vals[i-1]] > pos[vals[i]] {
				t.Errorf("partition %d: %s acknowledged before %s but stored after it", p, vals[i-1], vals[i])
				break
			}
		}
	}
	t.Logf("%d acknowledged records, all consumed: %d lost, %d duplicated", len(acks), lost, dup)
}

// TestKillLeaderUnderLoad is Kafka's replication test on real processes:
// RF 3, min.insync.replicas 2, acks=all idempotent producers; the leader
// of partition 0 is killed (kill -9) five times, each time restarted once
// a new leader serves; every acknowledged record is consumed exactly once,
// in order.
func TestKillLeaderUnderLoad(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			c := startCluster(t, 3, eng, "-min-insync-replicas", "2")
			c.createTopic("r", 3, 3, nil)
			l := startLoad(t, c, "r")
			for round := range 5 {
				time.Sleep(300 * time.Millisecond)
				td := c.waitLeaders("r", 30*time.Second)
				leader := int(td.Partitions[0].Leader)
				killed := time.Now()
				c.kill(c.node(leader))
				td = c.waitLeaders("r", 30*time.Second)
				t.Logf("%s round %d: leader %d of r-0 killed; %d leads %v later", eng, round, leader, td.Partitions[0].Leader, time.Since(killed).Round(time.Millisecond))
				c.start(c.node(leader))
				c.waitISR("r", 3, 60*time.Second)
			}
			time.Sleep(300 * time.Millisecond)
			acks, order := l.finish()
			require.NotEmpty(t, acks)
			checkLoad(t, c, "r", acks, order)
		})
	}
}

// TestKillAllUnderSyncAlways: under -sync=always acks=all means on the disk
// of min.insync.replicas brokers, so killing every broker at once (kill -9)
// and starting them again loses nothing acknowledged.
func TestKillAllUnderSyncAlways(t *testing.T) {
	for _, eng := range durableEngines {
		t.Run(eng, func(t *testing.T) {
			c := startCluster(t, 3, eng, "-min-insync-replicas", "2", "-sync", "always")
			c.createTopic("r", 3, 3, nil)
			l := startLoad(t, c, "r")
			time.Sleep(2 * time.Second)
			for _, nd := range c.Nodes() {
				// All at once: no one answers in between.
				require.NoError(t, syscall.Kill(nd.Child().Pid(), syscall.SIGKILL))
			}
			for _, nd := range c.Nodes() {
				<-nd.Child().Exited()
			}
			acks, order := l.finish()
			require.NotEmpty(t, acks)
			for _, nd := range c.Nodes() {
				c.start(nd)
			}
			c.waitBrokers(3, 60*time.Second)
			c.waitLeaders("r", 60*time.Second)
			checkLoad(t, c, "r", acks, order)
		})
	}
}
