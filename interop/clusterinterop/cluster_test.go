// Package clusterinterop runs three-broker clusters as real processes (the
// cmd/broker binary, built once per test run, started by broker/harness's
// Cluster on loopback ports) and drives them with real clients (franz-go,
// kcat, sarama) while it kills, stops and restarts brokers: placement,
// routing to leaders, controller failover, fencing, and replication that
// loses nothing acknowledged, on every durable engine.
package clusterinterop

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/broker/harness"
)

// brokerBin is the cmd/broker binary TestMain builds.
var brokerBin string

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithBroker(&brokerBin, m.Run))
}

// durableEngines are the engines every cluster test runs on.
var durableEngines = []string{"segment", "pebble", "badger"}

// cluster is a harness.Cluster whose every step must succeed in the test.
type cluster struct {
	t *testing.T
	*harness.Cluster
}

// startCluster starts n brokers on engine with args (extra cmd/broker
// flags) and waits until every one lists all of them; the brokers' output
// goes to the test log with -v.
func startCluster(t *testing.T, n int, engine string, args ...string) *cluster {
	t.Helper()
	return startClusterOn(t, nil, n, engine, args...)
}

// startClusterOn is startCluster with the brokers on hosts (nil: free
// loopback ports).
func startClusterOn(t *testing.T, hosts []harness.Host, n int, engine string, args ...string) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err := harness.StartCluster(ctx, harness.ClusterConfig{Bin: brokerBin, Engine: engine, Brokers: n, Dir: t.TempDir(),
		Args: args, Log: testLog{t}, Hosts: hosts})
	require.NoError(t, err)
	t.Cleanup(sc.Close)
	return &cluster{t: t, Cluster: sc}
}

// testLog forwards the brokers' output to the test log with -v.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	if testing.Verbose() {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (c *cluster) node(id int) *harness.Node { return c.Node(int32(id)) }

// kill sends SIGKILL to nd's process and waits for it to die.
func (c *cluster) kill(nd *harness.Node) {
	c.t.Helper()
	require.NoError(c.t, c.Kill(nd.ID), "kill broker %d", nd.ID)
}

// start runs nd's broker process again, on the same directory and ports.
func (c *cluster) start(nd *harness.Node) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(c.t, c.Start(ctx, nd.ID), "start broker %d", nd.ID)
}

// client is a franz-go client seeded with the running brokers, closed at
// the end of the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := c.Client(opts...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *cluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// seeds are the addresses of the running brokers.
func (c *cluster) seeds() []string { return c.Seeds() }

// metadata asks the running brokers for the cluster's metadata.
func (c *cluster) metadata(ctx context.Context, topics ...string) (kadm.Metadata, error) {
	return c.Metadata(ctx, topics...)
}

// waitBrokers waits until every running broker lists exactly n brokers.
func (c *cluster) waitBrokers(n int, d time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	require.NoError(c.t, c.WaitBrokers(ctx, n))
}

// createTopic creates a topic and waits until every partition has a leader.
func (c *cluster) createTopic(name string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.CreateTopic(ctx, name, partitions, rf, configs)
	require.NoError(c.t, err)
}

// waitLeaders waits until every partition of topic has a leader that runs.
func (c *cluster) waitLeaders(topic string, d time.Duration) kadm.TopicDetail {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	td, err := c.WaitLeaders(ctx, topic)
	require.NoError(c.t, err)
	return td
}

// waitISR waits until every partition of topic has n replicas in sync.
func (c *cluster) waitISR(topic string, n int, d time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	require.NoError(c.t, c.WaitISR(ctx, topic, n))
}

// controller is the active controller's id, from DescribeQuorum.
func (c *cluster) controller(ctx context.Context) (int, error) {
	id, err := c.Controller(ctx)
	return int(id), err
}

// kadmOffset is one partition's listed offset.
type kadmOffset = kadm.ListedOffset
