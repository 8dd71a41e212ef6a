package clusterinterop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// newNetlab makes n hosts (broker/harness/netlab) removed at the end of the test,
// or skips it, saying why, where network namespaces cannot be made.
func newNetlab(t *testing.T, n int) *netlab.Lab {
	t.Helper()
	lab, err := netlab.New(n)
	if errors.Is(err, netlab.ErrUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = lab.Close() })
	return lab
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
	c := startClusterOn(t, lab.Hosts(9092, 9192), 3, "segment", "-min-insync-replicas", "2")
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
	require.NoError(t, lab.Cut(old))
	// A producer next to the old leader, which answers it as the leader.
	stale := exec.CommandContext(ctx, "ip", "netns", "exec", lab.Netns(old), kcat, "-b", c.node(old).Addr, "-P", "-t", "p",
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

	require.NoError(t, lab.Heal(old))
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
