package groupinterop

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/interop/interoptest"
)

// Session timeouts the consumers ask for. shortSession is how long a
// killed member keeps its partitions: Kafka's minimum
// (group.min.session.timeout.ms, 6 s) would make that scenario wait 6 s, so
// the brokers here allow down to minSessionTimeout (Config.Groups).
// longSession is for the scenarios that wait for no expiry: a member of a
// loaded test machine is never taken for dead there (a spurious rebalance
// could deliver a record twice). heartbeatInterval is short: members learn
// of a rebalance at their next heartbeat.
const (
	shortSession      = 2 * time.Second
	longSession       = 10 * time.Second
	minSessionTimeout = time.Second
	heartbeatInterval = 100 * time.Millisecond
)

// rec is one consumed record.
type rec struct {
	Partition int32
	Offset    int64
	Value     string
}

// client is one Kafka client library driven as a group consumer.
type client struct {
	name string
	// start runs a consumer of topic in group with the given session
	// timeout, sending every record it reads to out.
	start func(t *testing.T, addr, group, topic string, session time.Duration, out chan<- rec) consumer
}

// consumer is a running group consumer.
type consumer interface {
	// Stop closes it the polite way: commit, LeaveGroup.
	Stop()
	// Kill makes it vanish without a word: no commit, no LeaveGroup.
	Kill()
}

var clients = []client{franzClient, saramaClient, kcatClient}

func clientNames() []string {
	var out []string
	for _, c := range clients {
		out = append(out, c.name)
	}
	return out
}

func targetNames(ts []interoptest.Target) []string {
	var out []string
	for _, tg := range ts {
		out = append(out, tg.Name)
	}
	return out
}

// concurrently runs fn(t, i) as the subtest names[i], all at once, and
// returns when every one is done. t.Parallel would cap them at -parallel
// (GOMAXPROCS: 2 on the test machine); these scenarios spend their time
// waiting on rebalances, heartbeats and fetch waits, not on the CPU, so
// they overlap well beyond that. (testing allows t.Run from several
// goroutines at once.)
func concurrently(t *testing.T, names []string, fn func(t *testing.T, i int)) {
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { fn(t, i) })
		}()
	}
	wg.Wait()
}

// stopAll stops consumers at once: one by one, each leaving would send the
// others through a rebalance first.
func stopAll(cs ...consumer) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Stop()
		}()
	}
	wg.Wait()
}

func admin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	_, err := admin(t, addr).CreateTopic(interoptest.Context(t), partitions, 1, nil, topic)
	require.NoError(t, err, "create %s", topic)
}

// produce writes n records "<prefix>-<i>" spread over the topic's
// partitions and returns them with their partitions and offsets.
func produce(t *testing.T, addr, topic, prefix string, n int) []rec {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := interoptest.Context(t)
	var mu sync.Mutex
	var out []rec
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i)), func(r *kgo.Record, err error) {
			defer wg.Done()
			require.NoError(t, err)
			mu.Lock()
			out = append(out, rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// collect reads out until it has every record of want, failing on a record
// read twice or not produced.
func collect(t *testing.T, out <-chan rec, want []rec) {
	t.Helper()
	wanted := map[rec]bool{}
	for _, r := range want {
		wanted[r] = true
	}
	seen := map[rec]bool{}
	ctx := interoptest.Context(t)
	for len(seen) < len(want) {
		select {
		case r := <-out:
			require.True(t, wanted[r], "read a record that was not produced: %+v", r)
			require.False(t, seen[r], "read twice: %+v", r)
			seen[r] = true
		case <-ctx.Done():
			t.Fatalf("read %d of %d records", len(seen), len(want))
		}
	}
}

// drainNone checks that nothing more arrives on out once the consumers
// are stopped (a late duplicate would).
func drainNone(t *testing.T, out <-chan rec) {
	t.Helper()
	for {
		select {
		case r := <-out:
			t.Fatalf("read after every record was read once: %+v", r)
		default:
			return
		}
	}
}

// assignment is who owns which partitions of one topic.
type assignment = load.Assignment

// waitAssigned waits until group is Stable with exactly members members
// that own every one of the topic's partitions, each once, and returns the
// assignment.
func waitAssigned(t *testing.T, addr, group, topic string, members, partitions int) assignment {
	t.Helper()
	adm := admin(t, addr)
	ctx := interoptest.Context(t)
	var last string
	for {
		a, state, err := load.Describe(ctx, adm, group, topic)
		if err == nil && state == "Stable" && len(a) == members && a.Covers(partitions) {
			return a
		}
		last = fmt.Sprintf("state %s, assignment %v, err %v", state, a, err)
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never settled on %d members owning %d partitions: %s", group, members, partitions, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killSwitch is a dialer whose connections can all be cut at once, with
// every later dial refused: the client behind it is dead as far as the
// broker can tell.
type killSwitch struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

func (k *killSwitch) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return nil, fmt.Errorf("dial %s: killed", addr)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

// Dial is DialContext for sarama's proxy dialer.
func (k *killSwitch) Dial(network, addr string) (net.Conn, error) {
	return k.DialContext(context.Background(), network, addr)
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for _, c := range k.conns {
		c.Close()
	}
}

// brokerTargets are the broker over every registered engine; durable keeps
// only the engines that survive a restart.
func brokerTargets(durable bool) []interoptest.Target {
	var out []interoptest.Target
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		if err != nil || (durable && !d.Caps.Durable) {
			continue
		}
		out = append(out, brokerTarget(name))
	}
	return out
}

// brokerTarget is interoptest.Broker with the session timeout bounds
// lowered to minSessionTimeout.
func brokerTarget(engineName string) interoptest.Target {
	return interoptest.Broker(engineName, brokertest.Configure(func(c *broker.Config) {
		c.Groups.MinSessionTimeout = minSessionTimeout
	}))
}
