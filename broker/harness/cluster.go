package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
)

// ClusterConfig says how to start a cluster of mini-kafka brokers, each a
// child process of bin (cmd/broker) and a controller voter.
type ClusterConfig struct {
	Bin     string
	Engine  string
	Brokers int
	// Dir holds a data directory per node (node-1, node-2, ...).
	Dir string
	// Sync is the brokers' -sync policy ("" is the broker's default).
	Sync string
	// Args are extra broker flags (-min-insync-replicas 2, ...).
	Args []string
	// Log gets every broker's output, each line after "node N: ".
	Log io.Writer
	// Hosts, when set, places node i+1 on Hosts[i] instead of free
	// loopback ports: one per broker.
	Hosts []Host
}

// Host is where a node runs: its two listeners, and the network namespace
// its process runs in ("" is this one's), entered with iproute2's
// "ip netns exec", which execs the broker so its pid is the broker's.
type Host struct {
	Addr, ControllerAddr string
	Netns                string
}

// Cluster is Brokers processes of cmd/broker on loopback ports, every one
// a controller voter (the cluster flags of cmd/broker). A node keeps its
// ports and data directory across restarts. Its methods are safe for
// concurrent use.
type Cluster struct {
	cfg    ClusterConfig
	voters string
	nodes  []*Node

	mu  sync.Mutex
	bin string // what Start runs: cfg.Bin until SetBin
}

// Node is one broker of a Cluster.
type Node struct {
	ID             int32
	Dir            string
	Addr           string // the Kafka listener
	ControllerAddr string
	Netns          string // the network namespace it runs in, "" for this one

	mu    sync.Mutex
	child *Child // nil before the first start
}

// StartCluster starts every node and waits until Metadata lists all of
// them, or ctx ends. On an error the nodes already started are killed.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Brokers < 1 {
		return nil, fmt.Errorf("cluster: %d brokers", cfg.Brokers)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Hosts != nil && len(cfg.Hosts) != cfg.Brokers {
		return nil, fmt.Errorf("cluster: %d hosts for %d brokers", len(cfg.Hosts), cfg.Brokers)
	}
	c := &Cluster{cfg: cfg, bin: cfg.Bin}
	var voters []string
	for i := range cfg.Brokers {
		h, err := hostOf(cfg, i)
		if err != nil {
			return nil, err
		}
		n := &Node{ID: int32(i + 1), Dir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i+1)),
			Addr: h.Addr, ControllerAddr: h.ControllerAddr, Netns: h.Netns}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.ControllerAddr))
	}
	c.voters = strings.Join(voters, ",")
	for _, n := range c.nodes {
		if err := c.Start(ctx, n.ID); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitBrokers(ctx, cfg.Brokers); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// hostOf is where node i+1 runs: cfg.Hosts[i], or two free loopback ports.
func hostOf(cfg ClusterConfig, i int) (Host, error) {
	if cfg.Hosts != nil {
		return cfg.Hosts[i], nil
	}
	addr, err := FreeAddr()
	if err != nil {
		return Host{}, err
	}
	ctl, err := FreeAddr()
	if err != nil {
		return Host{}, err
	}
	return Host{Addr: addr, ControllerAddr: ctl}, nil
}

// ClusterArgs is the command line of node id of a cluster whose voters
// are id@host:port,...
func ClusterArgs(engine string, id int32, dir, addr, controllerAddr, voters, sync string) []string {
	args := []string{"-node-id", fmt.Sprint(id), "-dir", dir, "-engine", engine,
		"-addr", addr, "-advertised-addr", addr,
		"-controller-addr", controllerAddr, "-controllers", voters, "-log-level", "warn"}
	if sync != "" {
		args = append(args, "-sync", sync)
	}
	return args
}

// Nodes are the cluster's nodes, by id.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node is node id, or nil.
func (c *Cluster) Node(id int32) *Node {
	if id < 1 || int(id) > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// Start starts node id's process (again, on the same directory and
// ports) and returns once its Kafka listener accepts connections: the
// broker listens before it opens its partitions, so it may not serve yet.
func (c *Cluster) Start(ctx context.Context, id int32) error {
	n := c.Node(id)
	if n == nil {
		return fmt.Errorf("cluster: no node %d", id)
	}
	if n.Running() {
		return fmt.Errorf("cluster: node %d is running", id)
	}
	args := append(ClusterArgs(c.cfg.Engine, n.ID, n.Dir, n.Addr, n.ControllerAddr, c.voters, c.cfg.Sync), c.cfg.Args...)
	c.mu.Lock()
	path := c.bin
	c.mu.Unlock()
	if n.Netns != "" {
		path, args = "ip", append([]string{"netns", "exec", n.Netns, path}, args...)
	}
	log := &prefixed{w: c.cfg.Log, prefix: []byte(fmt.Sprintf("node %d: ", id))}
	ch, err := StartChild(ctx, ChildConfig{Path: path, Args: args, Addr: n.Addr, Log: log, Ready: 2 * time.Minute})
	if err != nil {
		return fmt.Errorf("cluster: node %d: %w", id, err)
	}
	n.mu.Lock()
	n.child = ch
	n.mu.Unlock()
	return nil
}

// SetBin makes every later Start run bin instead of ClusterConfig.Bin:
// a node restarted after it runs another build of the broker (an upgrade).
func (c *Cluster) SetBin(bin string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bin = bin
}

// Kill ends node id with SIGKILL and waits for it.
func (c *Cluster) Kill(id int32) error { return c.end(id, (*Child).Kill) }

// Stop sends node id SIGTERM (a controlled shutdown: its leaderships move
// first) and waits for it to exit.
func (c *Cluster) Stop(id int32) error { return c.end(id, (*Child).Stop) }

func (c *Cluster) end(id int32, how func(*Child) error) error {
	n := c.Node(id)
	if n == nil {
		return fmt.Errorf("cluster: no node %d", id)
	}
	ch := n.Child()
	if ch == nil {
		return fmt.Errorf("cluster: node %d never started", id)
	}
	if err := how(ch); err != nil {
		return fmt.Errorf("cluster: node %d: %w", id, err)
	}
	return nil
}

// Close kills every node that runs.
func (c *Cluster) Close() {
	for _, n := range c.nodes {
		if n.Running() {
			_ = n.Child().Kill()
		}
	}
}

// Child is the node's current process, nil before its first start.
func (n *Node) Child() *Child {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.child
}

// Running reports whether the node's process runs.
func (n *Node) Running() bool {
	ch := n.Child()
	if ch == nil {
		return false
	}
	select {
	case <-ch.Exited():
		return false
	default:
		return true
	}
}

// Running lists the nodes whose process runs.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Seeds are the Kafka addresses of the running nodes.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, n := range c.Running() {
		out = append(out, n.Addr)
	}
	return out
}

// Client is a franz-go client seeded with the running nodes; the caller
// closes it.
func (c *Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
}

// Metadata asks the running nodes for the cluster's metadata (all topics
// when none is named).
func (c *Cluster) Metadata(ctx context.Context, topics ...string) (kadm.Metadata, error) {
	cl, err := c.Client()
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	return kadm.NewClient(cl).Metadata(ctx, topics...)
}

// pollEvery is how often the waits below look again.
const pollEvery = 20 * time.Millisecond

// poll calls ok until it returns true or ctx ends; the error then says
// what was awaited and what ok last said.
func poll(ctx context.Context, what string, ok func(context.Context) (bool, error)) error {
	var last error
	for {
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		done, err := ok(short)
		cancel()
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("cluster: %s: %w (last: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("cluster: %s: %w", what, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// WaitBrokers waits until the Metadata of every running node lists
// exactly n unfenced brokers. Asking every node matters after a restart:
// the restarted node's image may still show itself as it was before it
// died, while the others' show what the controller decided since.
func (c *Cluster) WaitBrokers(ctx context.Context, n int) error {
	return poll(ctx, fmt.Sprintf("waiting for %d brokers", n), func(ctx context.Context) (bool, error) {
		for _, node := range c.Running() {
			got, err := node.brokers(ctx)
			if err != nil || len(got) != n {
				return false, err
			}
		}
		return true, nil
	})
}

// WaitFenced waits until no running node other than id lists broker id:
// the registration of its last process is fenced. A node started again
// before that can be listed by its previous registration, which tells
// nothing of whether the new process registered.
func (c *Cluster) WaitFenced(ctx context.Context, id int32) error {
	return poll(ctx, fmt.Sprintf("waiting for broker %d to be fenced", id), func(ctx context.Context) (bool, error) {
		for _, node := range c.Running() {
			if node.ID == id {
				continue
			}
			got, err := node.brokers(ctx)
			if err != nil || slices.Contains(got, id) {
				return false, err
			}
		}
		return true, nil
	})
}

// brokers are the unfenced brokers the node's own Metadata lists.
func (n *Node) brokers(ctx context.Context) ([]int32, error) {
	d, err := Dial(n.Addr)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Brokers(ctx)
}

// WaitLeaders waits until every partition of topic has a leader whose
// process runs, and returns the topic as it was then.
func (c *Cluster) WaitLeaders(ctx context.Context, topic string) (kadm.TopicDetail, error) {
	var td kadm.TopicDetail
	err := poll(ctx, "waiting for leaders of "+topic, func(ctx context.Context) (bool, error) {
		m, err := c.Metadata(ctx, topic)
		if err != nil {
			return false, err
		}
		td = m.Topics[topic]
		return td.Err == nil && len(td.Partitions) > 0 && c.allLed(td), td.Err
	})
	return td, err
}

func (c *Cluster) allLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if n := c.Node(p.Leader); p.Err != nil || n == nil || !n.Running() {
			return false
		}
	}
	return true
}

// WaitISR waits until every partition of topic has n replicas in sync.
func (c *Cluster) WaitISR(ctx context.Context, topic string, n int) error {
	return poll(ctx, fmt.Sprintf("waiting for %d replicas of %s in sync", n, topic), func(ctx context.Context) (bool, error) {
		m, err := c.Metadata(ctx, topic)
		if err != nil {
			return false, err
		}
		td := m.Topics[topic]
		if td.Err != nil || len(td.Partitions) == 0 {
			return false, td.Err
		}
		for _, p := range td.Partitions {
			if len(p.ISR) != n {
				return false, nil
			}
		}
		return true, nil
	})
}

// CreateTopic creates topic with partitions of replication factor rf and
// waits until every partition has a running leader.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int32, rf int16, configs map[string]*string) (kadm.TopicDetail, error) {
	cl, err := c.Client()
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("cluster: create %s: %w", topic, err)
	}
	return c.WaitLeaders(ctx, topic)
}

// Controller is the active controller's node id, from DescribeQuorum.
func (c *Cluster) Controller(ctx context.Context) (int32, error) {
	cl, err := c.Client()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return ActiveController(ctx, cl)
}

// ActiveController asks cl's cluster for the leader of the controller
// quorum (DescribeQuorum on __cluster_metadata).
func ActiveController(ctx context.Context, cl *kgo.Client) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("cluster: DescribeQuorum: %w", err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("cluster: DescribeQuorum: error code %d", resp.ErrorCode)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID < 0 {
		return 0, fmt.Errorf("cluster: DescribeQuorum: no leader (error code %d)", p.ErrorCode)
	}
	return p.LeaderID, nil
}

// Others are the ids of the nodes other than those given, in id order.
func (c *Cluster) Others(ids ...int32) []int32 {
	var out []int32
	for _, n := range c.nodes {
		if !slices.Contains(ids, n.ID) {
			out = append(out, n.ID)
		}
	}
	return out
}

// Direct is a client of one broker that sends every request to that
// broker, whatever the request (no routing to leaders or the controller):
// what that broker answers is what is measured.
type Direct struct {
	cl *kgo.Client
	b  *kgo.Broker
}

// Dial makes a Direct client of the broker at addr (no connection is made
// before the first request).
func Dial(addr string, opts ...kgo.Opt) (*Direct, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cluster: client of %s: %w", addr, err)
	}
	seeds := cl.SeedBrokers()
	if len(seeds) != 1 {
		cl.Close()
		return nil, errors.New("cluster: a direct client wants exactly one seed")
	}
	return &Direct{cl: cl, b: seeds[0]}, nil
}

// Request sends req to the broker.
func (d *Direct) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return d.b.Request(ctx, req)
}

// Metadata asks the broker for topics (all when none is named), as
// franz-go's Metadata would, but of this broker alone.
func (d *Direct) Metadata(ctx context.Context, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // a probe must not create what it looks for
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := d.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Brokers are the unfenced brokers the broker's Metadata lists (asked
// for no topic, so that the answer stays small whatever the cluster
// holds).
func (d *Direct) Brokers(ctx context.Context) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := d.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		ids = append(ids, b.NodeID)
	}
	return ids, nil
}

// Close closes the client.
func (d *Direct) Close() { d.cl.Close() }

// prefixed writes every line it is given to w after prefix (a broker
// writes its log a line per Write; a line split over two gets the prefix
// once).
type prefixed struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  []byte
	midLine bool
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	var out []byte
	for len(b) > 0 {
		if !p.midLine {
			out = append(out, p.prefix...)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out, b, p.midLine = append(out, b...), nil, true
			break
		}
		out, b, p.midLine = append(out, b[:i+1]...), b[i+1:], false
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// Dirs lists the nodes' data directories.
func (c *Cluster) Dirs() []string {
	dirs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		dirs[i] = n.Dir
	}
	return dirs
}

// WaitDeleted waits until the brokers on the data directories dirs hold
// no directory of the topic with id, not even one set aside for deletion:
// a broker deletes a removed partition's files in the background, at a
// pace, and a workload measured meanwhile would share the disk with the
// previous one's cleanup.
func WaitDeleted(ctx context.Context, id uuid.UUID, dirs ...string) error {
	return poll(ctx, "deletion of topic "+id.String(), func(context.Context) (bool, error) {
		for _, d := range dirs {
			left, err := partition.TopicDirs(d, id)
			if err != nil || len(left) > 0 {
				return false, err
			}
		}
		return true, nil
	})
}
