package quorum

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	_ "github.com/minikafka/minikafka/engines/memory"
	_ "github.com/minikafka/minikafka/engines/segment"
)

// testSM is a StateMachine whose state is the list of payloads applied,
// with their indexes: two states are equal only if the same entries were
// applied at the same indexes.
type testSM struct {
	recs []rec
	last uint64
}

type rec struct {
	Index   uint64
	Payload string
}

func (s *testSM) Apply(index uint64, payload []byte) error {
	if index <= s.last {
		return fmt.Errorf("apply %d after %d", index, s.last)
	}
	s.recs = append(s.recs, rec{index, string(payload)})
	s.last = index
	return nil
}

func (s *testSM) Snapshot() ([]byte, error) {
	b := binary.BigEndian.AppendUint64(nil, s.last) // the last payload's index
	for _, r := range s.recs {
		b = binary.BigEndian.AppendUint64(b, r.Index)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Payload)))
		b = append(b, r.Payload...)
	}
	return b, nil
}

func (s *testSM) Restore(index uint64, data []byte) error {
	if len(data) < 8 {
		return errors.New("short snapshot")
	}
	// The snapshot's index can be past the last payload: raft's own empty
	// entries are never given to Apply.
	last := binary.BigEndian.Uint64(data)
	if last > index {
		return fmt.Errorf("snapshot holding %d restored as %d", last, index)
	}
	s.last, data = index, data[8:]
	s.recs = nil
	for len(data) > 0 {
		i := binary.BigEndian.Uint64(data)
		n := binary.BigEndian.Uint32(data[8:])
		s.recs = append(s.recs, rec{i, string(data[12 : 12+n])})
		data = data[12+n:]
	}
	return nil
}

func (s *testSM) payloads() []string {
	var p []string
	for _, r := range s.recs {
		p = append(p, r.Payload)
	}
	return p
}

// cluster drives Nodes in one goroutine over a tiny router: settle
// processes every node and delivers every message until nothing moves.
type cluster struct {
	t      testing.TB
	fs     vfs.FS
	engine string
	seed   uint64
	ids    []uint64
	nodes  map[uint64]*Node // nil: down
	sms    map[uint64]*testSM
	starts map[uint64]uint64 // how many times each node was opened
	cut    map[[2]uint64]bool
	tweak  func(*NodeConfig)

	applied map[uint64]map[ProposalID]uint64 // per node, this incarnation
	snaps   int                              // MsgSnap delivered
	trace   hash.Hash
	errs    []error // Step errors

	// tolerant: an error (a crash test's lost power) stops the workload
	// instead of failing the test; failed is the first.
	tolerant bool
	failed   error
}

// ok reports whether the workload goes on; err fails the test unless the
// cluster is tolerant.
func (c *cluster) ok(err error, what string, args ...any) bool {
	if c.failed != nil {
		return false
	}
	if err == nil {
		return true
	}
	if !c.tolerant {
		require.NoError(c.t, err, append([]any{what}, args...)...)
	}
	c.failed = fmt.Errorf("%s: %w", fmt.Sprintf(what, args...), err)
	return false
}

func newCluster(t testing.TB, engineName string, seed uint64, n int, tweak func(*NodeConfig)) *cluster {
	c := makeCluster(t, vfs.NewMem(), engineName, seed, n, tweak, false)
	c.startAll()
	return c
}

// makeCluster is a cluster of n nodes on fs, none started yet.
func makeCluster(t testing.TB, fs vfs.FS, engineName string, seed uint64, n int, tweak func(*NodeConfig), tolerant bool) *cluster {
	c := &cluster{
		t: t, fs: fs, engine: engineName, seed: seed, tolerant: tolerant,
		nodes: map[uint64]*Node{}, sms: map[uint64]*testSM{}, starts: map[uint64]uint64{},
		cut: map[[2]uint64]bool{}, tweak: tweak, applied: map[uint64]map[ProposalID]uint64{},
		trace: sha256.New(),
	}
	for i := range n {
		c.ids = append(c.ids, uint64(i+1))
	}
	t.Cleanup(c.closeAll)
	return c
}

func (c *cluster) startAll() {
	for _, id := range c.ids {
		c.start(id)
	}
}

func (c *cluster) closeAll() {
	for _, id := range c.ids {
		if c.nodes[id] != nil {
			c.nodes[id].Close()
			c.nodes[id] = nil
		}
	}
}

func (c *cluster) config(id uint64) NodeConfig {
	c.starts[id]++
	cfg := NodeConfig{
		NodeID: id, Voters: c.ids, ClusterID: "test", Dir: fmt.Sprintf("/n%d", id), FS: c.fs,
		Engine: c.engine, Rand: rand.New(rand.NewPCG(c.seed, id<<32|c.starts[id])),
		StateMachine: &testSM{},
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	return cfg
}

// start opens node id from its directory with an empty state machine.
func (c *cluster) start(id uint64) {
	cfg := c.config(id)
	n, err := OpenNode(cfg)
	if !c.ok(err, "open node %d", id) {
		return
	}
	c.nodes[id], c.sms[id] = n, cfg.StateMachine.(*testSM)
	c.applied[id] = map[ProposalID]uint64{}
}

// stop closes node id: a process that stopped (its disk is kept).
func (c *cluster) stop(id uint64) {
	require.NoError(c.t, c.nodes[id].Close())
	c.nodes[id] = nil
}

func (c *cluster) isolate(id uint64) {
	for _, o := range c.ids {
		if o != id {
			c.cut[[2]uint64{id, o}], c.cut[[2]uint64{o, id}] = true, true
		}
	}
}

func (c *cluster) heal() { clear(c.cut) }

// follower is the first node by id that is not l.
func (c *cluster) follower(l uint64) uint64 {
	for _, id := range c.ids {
		if id != l {
			return id
		}
	}
	c.t.Fatal("no node other than the leader")
	return 0
}

// settle processes every live node and delivers their messages until no
// node has work and no message is in flight.
func (c *cluster) settle() {
	var queue []raftpb.Message
	for round := 0; c.failed == nil; round++ {
		require.Less(c.t, round, 10000, "the cluster does not settle")
		moved := false
		for _, id := range c.ids {
			n := c.nodes[id]
			for n != nil && n.HasReady() {
				out, err := n.Process()
				if !c.ok(err, "node %d", id) {
					return
				}
				c.record(id, out)
				queue = append(queue, out.Messages...)
				moved = true
			}
		}
		if !moved && len(queue) == 0 {
			return
		}
		batch := queue
		queue = nil
		for _, m := range batch {
			c.deliver(m)
		}
	}
}

func (c *cluster) deliver(m raftpb.Message) {
	from, to := c.nodes[m.From], c.nodes[m.To]
	if to == nil || c.cut[[2]uint64{m.From, m.To}] {
		if from != nil {
			from.ReportUnreachable(m.To)
			if m.Type == raftpb.MsgSnap {
				from.ReportSnapshot(m.To, raft.SnapshotFailure)
			}
		}
		return
	}
	// Through bytes, as on a network: no memory is shared between nodes.
	b, err := m.Marshal()
	require.NoError(c.t, err)
	var cp raftpb.Message
	require.NoError(c.t, cp.Unmarshal(b))
	if err := to.Step(cp); err != nil {
		c.errs = append(c.errs, err)
	}
	if m.Type == raftpb.MsgSnap {
		c.snaps++
		if from != nil {
			from.ReportSnapshot(m.To, raft.SnapshotFinish)
		}
	}
}

// record hashes an Output into the trace and notes applied proposals.
func (c *cluster) record(id uint64, out Output) {
	h := c.trace
	fmt.Fprintf(h, "node %d leader %d term %d changed %v applied %d\n", id, out.Leader, out.Term, out.LeaderChanged, out.AppliedIndex)
	for _, m := range out.Messages {
		b, _ := m.Marshal()
		h.Write(b)
	}
	for _, a := range out.Applied {
		fmt.Fprintf(h, "proposal %d at %d\n", a.ID, a.Index)
		c.applied[id][a.ID] = a.Index
	}
}

// tick ticks every live node k times, settling after each.
func (c *cluster) tick(k int) {
	for range k {
		if c.failed != nil {
			return
		}
		for _, id := range c.ids {
			if n := c.nodes[id]; n != nil {
				n.Tick()
			}
		}
		c.settle()
	}
}

// activeLeaders lists the live nodes that are Active leaders.
func (c *cluster) activeLeaders() []uint64 {
	var ids []uint64
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil && n.Active() {
			ids = append(ids, id)
		}
	}
	return ids
}

// waitLeader ticks until exactly one live node, other than those in not,
// is an Active leader, and returns it with the ticks it took.
func (c *cluster) waitLeader(maxTicks int, not ...uint64) (uint64, int) {
	for i := 0; i <= maxTicks && c.failed == nil; i++ {
		if l := c.activeLeaders(); len(l) == 1 && !slices.Contains(not, l[0]) {
			return l[0], i
		}
		c.tick(1)
	}
	if c.failed != nil {
		return 0, 0
	}
	err := fmt.Errorf("no single active leader after %d ticks: %v", maxTicks, c.activeLeaders())
	if !c.tolerant {
		c.t.Fatal(err)
	}
	c.failed = err
	return 0, 0
}

func (c *cluster) propose(id uint64, payload string) ProposalID {
	if c.failed != nil {
		return 0
	}
	pid, err := c.nodes[id].Propose([]byte(payload))
	c.ok(err, "propose %q at %d", payload, id)
	return pid
}

// requireSame checks that every live node applied exactly want, in order.
func (c *cluster) requireSame(want []string) {
	for _, id := range c.ids {
		if c.nodes[id] != nil {
			require.Equal(c.t, want, c.sms[id].payloads(), "node %d", id)
		}
	}
}

func payloads(prefix string, n int) []string {
	var p []string
	for i := range n {
		p = append(p, fmt.Sprintf("%s-%d", prefix, i))
	}
	return p
}

func equalRecs(a, b []rec) bool {
	return slices.EqualFunc(a, b, func(x, y rec) bool { return x.Index == y.Index && bytes.Equal([]byte(x.Payload), []byte(y.Payload)) })
}
