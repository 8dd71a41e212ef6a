package brokertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/harness"
)

// Cluster is n in-process brokers, every one a controller voter, on
// loopback listeners: what a test of replication or failover needs without
// processes (interop/clusterinterop runs processes).
type Cluster struct {
	Nodes []*Node
}

// Node is one broker of a Cluster: its Config, its Addr and CtlAddr
// (which stay the same across Start), and its Server (nil while stopped).
type Node struct {
	*harness.InProcess
}

// StartCluster starts n brokers (node ids 1..n), every one a voter, and
// waits until each is registered and unfenced. They stop when the test ends.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	return StartClusterOf(t, n, n, opts...)
}

// StartClusterOf is StartCluster where only nodes 1..voters are controller
// voters; the others are brokers that follow the voters' metadata.
func StartClusterOf(t testing.TB, n, voterCount int, opts ...Option) *Cluster {
	t.Helper()
	lns, ctls, voters, err := harness.ListenCluster(n, voterCount)
	require.NoError(t, err)
	c := &Cluster{}
	for i := range n {
		cfg := baseConfig(t)
		for _, o := range opts {
			o(&cfg)
		}
		if cfg.Dir == "" || i > 0 {
			cfg.Dir = t.TempDir()
		}
		cfg.NodeID, cfg.Controllers = int32(i+1), voters
		cfg.ControllerAddr, cfg.AdvertisedAddr = ctls[i].Addr().String(), lns[i].Addr().String()
		b, err := harness.ServeInProcess(cfg, lns[i], ctls[i])
		require.NoError(t, err)
		c.Nodes = append(c.Nodes, &Node{b})
	}
	t.Cleanup(func() {
		// Concurrently: a broker's controlled shutdown needs a quorum.
		var wg sync.WaitGroup
		for _, nd := range c.Nodes {
			wg.Go(func() { nd.Stop(t) })
		}
		wg.Wait()
	})
	for _, nd := range c.Nodes {
		waitReady(t, nd.InProcess)
	}
	return c
}

// Node returns node id (1-based).
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Stop closes the node's broker gracefully (a controlled shutdown). A
// stopped node stays stopped until Start.
func (nd *Node) Stop(t testing.TB) {
	t.Helper()
	require.NoError(t, nd.Close(), "broker %d Close", nd.Config.NodeID)
}

// Start starts a stopped node again on its directory and addresses, and
// waits until it is unfenced.
func (nd *Node) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, nd.Restart(ctx), "broker %d start", nd.Config.NodeID)
}

// Seeds are the addresses of the running nodes.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, nd := range c.Nodes {
		if nd.Server != nil {
			out = append(out, nd.Addr)
		}
	}
	return out
}

// Client is a franz-go client seeded with the running nodes, closed when
// the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
	require.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic and waits until the metadata of every running
// node has it with a leader for every partition.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(c.Client(t)).CreateTopic(ctx, partitions, rf, configs, name)
	require.NoError(t, err, "create topic %s", name)
	require.NoError(t, resp.Err, "create topic %s", name)
	require.Eventually(t, func() bool {
		for _, nd := range c.Nodes {
			if nd.Server == nil {
				continue
			}
			tp, ok := nd.Server.Metadata().Topic(name)
			if !ok {
				return false
			}
			for _, p := range tp.Partitions {
				if p.Leader < 0 {
					return false
				}
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, fmt.Sprintf("every node has topic %s with leaders", name))
}
