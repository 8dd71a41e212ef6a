package clusterinterop

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench/server"
)

// netlab is a bridge and one network namespace per broker, each joined to
// the bridge by a veth pair: real hosts with their own addresses, that a
// test cuts off by taking a veth down. It needs root and iproute2.
type netlab struct {
	t      *testing.T
	subnet int
	bridge string
	ns     []string
}

func newNetlab(t *testing.T, n int) *netlab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need iproute2's ip")
	}
	l := &netlab{t: t, subnet: 10 + rand.IntN(240)}
	tag := fmt.Sprintf("%d%d", os.Getpid()%10000, rand.IntN(100))
	l.bridge = "mkbr" + tag
	t.Cleanup(l.remove)
	l.ip("link", "add", l.bridge, "type", "bridge")
	l.ip("addr", "add", fmt.Sprintf("10.199.%d.254/24", l.subnet), "dev", l.bridge)
	l.ip("link", "set", l.bridge, "up")
	for i := 1; i <= n; i++ {
		ns := fmt.Sprintf("mk%s-%d", tag, i)
		host, peer := fmt.Sprintf("mkh%s%d", tag, i), fmt.Sprintf("mkp%s%d", tag, i)
		l.ip("netns", "add", ns)
		l.ns = append(l.ns, ns)
		l.ip("link", "add", host, "type", "veth", "peer", "name", peer)
		l.ip("link", "set", peer, "netns", ns)
		l.ip("link", "set", host, "master", l.bridge)
		l.ip("link", "set", host, "up")
		l.ip("-n", ns, "addr", "add", fmt.Sprintf("%s/24", l.addr(i)), "dev", peer)
		l.ip("-n", ns, "link", "set", peer, "up")
		l.ip("-n", ns, "link", "set", "lo", "up")
	}
	return l
}

func (l *netlab) addr(i int) string { return fmt.Sprintf("10.199.%d.%d", l.subnet, i) }

func (l *netlab) hostVeth(i int) string {
	return fmt.Sprintf("mkh%s%d", strings.TrimPrefix(l.bridge, "mkbr"), i)
}

// cut takes host i off the network; heal puts it back.
func (l *netlab) cut(i int)  { l.ip("link", "set", l.hostVeth(i), "down") }
func (l *netlab) heal(i int) { l.ip("link", "set", l.hostVeth(i), "up") }

func (l *netlab) ip(args ...string) {
	l.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		l.t.Skipf("network namespaces unavailable: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (l *netlab) remove() {
	for _, ns := range l.ns {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", l.bridge).Run()
}

// TestPartitionedLeaderCannotAcknowledge: the leader of a partition is cut
// off from the rest of the cluster, but not from a producer beside it (in
// its namespace). The majority elects a new leader and goes on
// acknowledging; the old leader, which still believes it leads, takes the
// producer's acks=all write but can never acknowledge it (its followers
// fetch elsewhere, so its high watermark cannot pass it). Healed, it
// follows the new leader and drops that write; every acknowledged record
// is there exactly once.
func TestPartitionedLeaderCannotAcknowledge(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	lab := newNetlab(t, 3)
	var hosts []server.Host
	for i := 1; i <= 3; i++ {
		hosts = append(hosts, server.Host{Netns: lab.ns[i-1], Addr: lab.addr(i) + ":9092", ControllerAddr: lab.addr(i) + ":9192"})
	}
	c := startClusterOn(t, hosts, 3, "segment", "-min-insync-replicas", "2")
	c.createTopic("p", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	acked := map[string]bool{}
	produce := func(seeds []string, prefix string, n int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("p"), kgo.RequiredAcks(kgo.AllISRAcks()))
		require.NoError(t, err)
		defer cl.Close()
		for i := range n {
			v := fmt.Sprintf("%s-%d", prefix, i)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), "produce %s", v)
			acked[v] = true
		}
	}
	produce(c.seeds(), "before", 50)

	td := c.waitLeaders("p", 30*time.Second)
	old := int(td.Partitions[0].Leader)
	var others []string
	for _, nd := range c.Nodes() {
		if int(nd.ID) != old {
			others = append(others, nd.Addr)
		}
	}
	lab.cut(old)
	// A producer next to the old leader, which answers it as the leader.
	stale := exec.CommandContext(ctx, "ip", "netns", "exec", lab.ns[old-1], kcat, "-b", c.node(old).Addr, "-P", "-t", "p",
		"-X", "acks=all", "-X", "message.timeout.ms=12000", "-X", "enable.idempotence=false")
	stale.Stdin = strings.NewReader("stale-write\n")
	var staleOut bytes.Buffer
	stale.Stdout, stale.Stderr = &staleOut, &staleOut
	require.NoError(t, stale.Start())

	// The majority fences the old leader, elects another and acknowledges.
	produce(others, "during", 50)
	err = stale.Wait()
	t.Logf("the old leader's producer: %v: %s", err, staleOut.String())
	require.True(t, err != nil || strings.Contains(staleOut.String(), "Failed to deliver"),
		"an acks=all write to the partitioned-away leader is never acknowledged")

	lab.heal(old)
	c.waitBrokers(3, 60*time.Second)
	c.waitISR("p", 3, 60*time.Second)
	got := consumeValues(t, others[0], "p", "", len(acked))
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for v := range acked {
		assert.Equal(t, 1, seen[v], "%s acknowledged, stored %d times", v, seen[v])
	}
	assert.Zero(t, seen["stale-write"], "the old leader's write was never committed and is gone")
}
