// Package clusterinterop runs three-broker clusters as real processes (the
// cmd/broker binary, built once per test run) on loopback ports, and drives
// them with real clients (franz-go, kcat, sarama) while it kills, stops and
// restarts brokers: placement, routing to leaders, controller failover,
// fencing, and replication that loses nothing acknowledged, on every
// durable engine.
package clusterinterop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerBin is the cmd/broker binary TestMain builds.
var brokerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clusterinterop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	brokerBin = filepath.Join(dir, "broker")
	build := exec.Command("go", "build", "-o", brokerBin, "github.com/minikafka/minikafka/cmd/broker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cmd/broker:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// durableEngines are the engines every cluster test runs on.
var durableEngines = []string{"segment", "pebble", "badger"}

// cluster is n broker processes, every one a controller voter.
type cluster struct {
	t      *testing.T
	engine string
	args   []string
	voters string
	nodes  []*node
}

type node struct {
	id        int
	dir       string
	addr, ctl string
	// netns, when set, is the network namespace the broker runs in.
	netns        string
	mu           sync.Mutex
	cmd          *exec.Cmd
	exited       chan struct{}
	log          *lineLog
	restartCount int
}

// freeAddrs reserves n loopback ports by listening and closing.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// startCluster starts n brokers on engine with args (extra cmd/broker
// flags) and waits until every one is listed by Metadata.
func startCluster(t *testing.T, n int, engine string, args ...string) *cluster {
	t.Helper()
	addrs := freeAddrs(t, 2*n)
	nodes := make([]*node, n)
	for i := range n {
		nodes[i] = &node{id: i + 1, dir: t.TempDir(), addr: addrs[2*i], ctl: addrs[2*i+1]}
	}
	return runCluster(t, nodes, engine, args...)
}

// runCluster starts the brokers of nodes (addresses and directories set)
// and waits until every one is listed by Metadata.
func runCluster(t *testing.T, nodes []*node, engine string, args ...string) *cluster {
	t.Helper()
	n := len(nodes)
	c := &cluster{t: t, engine: engine, args: args}
	var voters []string
	for _, nd := range nodes {
		c.nodes = append(c.nodes, nd)
		voters = append(voters, fmt.Sprintf("%d@%s", nd.id, nd.ctl))
	}
	c.voters = strings.Join(voters, ",")
	for _, nd := range c.nodes {
		c.start(nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.kill(nd)
		}
	})
	c.waitBrokers(n, 30*time.Second)
	return c
}

func (c *cluster) node(id int) *node { return c.nodes[id-1] }

// start runs nd's broker process (again, on the same directory and ports).
func (c *cluster) start(nd *node) {
	c.t.Helper()
	args := append([]string{
		"-node-id", fmt.Sprint(nd.id), "-dir", nd.dir, "-engine", c.engine,
		"-addr", nd.addr, "-advertised-addr", nd.addr,
		"-controller-addr", nd.ctl, "-controllers", c.voters,
	}, c.args...)
	cmd := exec.Command(brokerBin, args...)
	if nd.netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", nd.netns, brokerBin}, args...)...)
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(c.t, err)
	nd.mu.Lock()
	nd.restartCount++
	nd.log = &lineLog{t: c.t, prefix: fmt.Sprintf("broker %d.%d: ", nd.id, nd.restartCount)}
	nd.mu.Unlock()
	require.NoError(c.t, cmd.Start(), "start broker %d", nd.id)
	exited := make(chan struct{})
	go func() {
		nd.log.copy(stderr)
		_ = cmd.Wait()
		close(exited)
	}()
	nd.mu.Lock()
	nd.cmd, nd.exited = cmd, exited
	nd.mu.Unlock()
	c.waitListening(nd, 30*time.Second)
}

func (c *cluster) waitListening(nd *node, d time.Duration) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		conn, err := net.DialTimeout("tcp", nd.addr, 100*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}, d, 20*time.Millisecond, "broker %d listens on %s", nd.id, nd.addr)
}

// kill sends SIGKILL to nd's process and waits for it to die.
func (c *cluster) kill(nd *node) { c.signal(nd, syscall.SIGKILL) }

// stop sends SIGTERM (a controlled shutdown) and waits for the exit.
func (c *cluster) stop(nd *node) { c.signal(nd, syscall.SIGTERM) }

func (c *cluster) signal(nd *node, sig syscall.Signal) {
	nd.mu.Lock()
	cmd, exited := nd.cmd, nd.exited
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		c.t.Errorf("broker %d did not exit within 30 s of %v", nd.id, sig)
	}
}

// alive lists the nodes whose process runs.
func (c *cluster) alive() []*node {
	var out []*node
	for _, nd := range c.nodes {
		nd.mu.Lock()
		exited := nd.exited
		nd.mu.Unlock()
		select {
		case <-exited:
		default:
			out = append(out, nd)
		}
	}
	return out
}

// seeds are the addresses of the running brokers.
func (c *cluster) seeds() []string {
	var out []string
	for _, nd := range c.alive() {
		out = append(out, nd.addr)
	}
	return out
}

// client is a franz-go client seeded with the running brokers, closed at
// the end of the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, opts...)...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *cluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// metadata asks the running brokers for the cluster's metadata.
func (c *cluster) metadata(ctx context.Context, topics ...string) (kadm.Metadata, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	return kadm.NewClient(cl).Metadata(ctx, topics...)
}

// waitBrokers waits until Metadata lists exactly n brokers.
func (c *cluster) waitBrokers(n int, d time.Duration) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := c.metadata(ctx)
		return err == nil && len(m.Brokers) == n
	}, d, 50*time.Millisecond, "Metadata lists %d brokers", n)
}

// createTopic creates a topic and waits until every partition has a leader.
func (c *cluster) createTopic(name string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.admin().CreateTopic(ctx, partitions, rf, configs, name)
	require.NoError(c.t, err)
	require.NoError(c.t, resp.Err, "create topic %s", name)
	c.waitLeaders(name, 30*time.Second)
}

// waitLeaders waits until every partition of topic has a leader that runs.
func (c *cluster) waitLeaders(topic string, d time.Duration) kadm.TopicDetail {
	c.t.Helper()
	var td kadm.TopicDetail
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := c.metadata(ctx, topic)
		if err != nil {
			return false
		}
		td = m.Topics[topic]
		if td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil || !c.running(int(p.Leader)) {
				return false
			}
		}
		return true
	}, d, 50*time.Millisecond, "every partition of %s has a live leader", topic)
	return td
}

func (c *cluster) running(id int) bool {
	for _, nd := range c.alive() {
		if nd.id == id {
			return true
		}
	}
	return false
}

// controller is the active controller's id, from DescribeQuorum.
func (c *cluster) controller(ctx context.Context) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("DescribeQuorum: error code %d", resp.ErrorCode)
	}
	return int(resp.Topics[0].Partitions[0].LeaderID), nil
}

// lineLog forwards a process's stderr to the test log, line by line, and
// keeps it for searching.
type lineLog struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	lines  []string
}

func (l *lineLog) copy(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
		if testing.Verbose() {
			l.t.Log(l.prefix + sc.Text())
		}
	}
}

func (l *lineLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// kadmOffset is one partition's listed offset.
type kadmOffset = kadm.ListedOffset
