package harness

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerBinary builds cmd/broker into a temporary directory.
func brokerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs cmd/broker")
	}
	bin, err := BuildBroker(t.Context(), t.TempDir(), "", io.Discard)
	require.NoError(t, err)
	return bin
}

func TestClusterKillStopRestart(t *testing.T) {
	bin := brokerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, ClusterConfig{Bin: bin, Engine: "segment", Brokers: 3, Dir: t.TempDir()})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, c.Seeds(), 3)

	td, err := c.CreateTopic(ctx, "t", 3, 3, nil)
	require.NoError(t, err)
	assert.Len(t, td.Partitions, 3)
	require.NoError(t, c.WaitISR(ctx, "t", 3))

	ctl, err := c.Controller(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Kill(ctl))
	assert.False(t, c.Node(ctl).Running())
	assert.Len(t, c.Seeds(), 2, "only running nodes are seeds")
	assert.Equal(t, c.Others(ctl), func() []int32 {
		var ids []int32
		for _, n := range c.Running() {
			ids = append(ids, n.ID)
		}
		return ids
	}())
	require.NoError(t, c.WaitBrokers(ctx, 2), "the killed controller is fenced by the next one")
	next, err := c.Controller(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, ctl, next)
	require.Error(t, c.Start(ctx, next), "a running node is not started twice")
	require.NoError(t, c.Start(ctx, ctl))
	require.NoError(t, c.WaitBrokers(ctx, 3))

	other := c.Others(next)[0]
	require.NoError(t, c.Stop(other), "a controlled shutdown")
	require.NoError(t, c.Start(ctx, other))
	require.NoError(t, c.WaitBrokers(ctx, 3))
	require.NoError(t, c.WaitISR(ctx, "t", 3), "the restarted broker rejoins")

	d, err := Dial(c.Node(other).Addr)
	require.NoError(t, err)
	defer d.Close()
	ids, err := d.Brokers(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []int32{1, 2, 3}, ids)
	m, err := d.Metadata(ctx, "t")
	require.NoError(t, err)
	require.Len(t, m.Topics, 1)
	assert.Len(t, m.Topics[0].Partitions, 3)
}

func TestPrefixed(t *testing.T) {
	var b strings.Builder
	p := &prefixed{w: &b, prefix: []byte("node 2: ")}
	for _, s := range []string{"one\ntwo\n", "thr", "ee\n", ""} {
		n, err := p.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n)
	}
	assert.Equal(t, "node 2: one\nnode 2: two\nnode 2: three\n", b.String())
}
