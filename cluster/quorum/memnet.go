package quorum

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// MemNetwork connects MemTransports in one process, for tests. Delivery is
// immediate and in order; links can be cut. (The simulator has its own
// network, with delays, and drives Nodes directly.)
type MemNetwork struct {
	mu       sync.Mutex
	nodes    map[uint64]*MemTransport
	cut      map[[2]uint64]bool
	isolated map[uint64]bool
}

// NewMemNetwork returns a network with every link up.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[uint64]*MemTransport{}, cut: map[[2]uint64]bool{}, isolated: map[uint64]bool{}}
}

// Transport returns node id's transport on the network.
func (n *MemNetwork) Transport(id uint64) *MemTransport { return &MemTransport{net: n, id: id} }

// Partition cuts the link between a and b, both ways.
func (n *MemNetwork) Partition(a, b uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]uint64{a, b}], n.cut[[2]uint64{b, a}] = true, true
}

// Cut drops the messages from one node to another, one way.
func (n *MemNetwork) Cut(from, to uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]uint64{from, to}] = true
}

// Isolate cuts every link of id.
func (n *MemNetwork) Isolate(id uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = true
}

// Heal brings every link back.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	clear(n.isolated)
}

// route returns the handler of the node a message from -> to reaches, or nil.
func (n *MemNetwork) route(from, to uint64) Handler {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.nodes[to]
	if t == nil || n.cut[[2]uint64{from, to}] || n.isolated[from] || n.isolated[to] {
		return nil
	}
	return t.h
}

// reachableLocked lists the handlers of the other nodes that from's
// messages reach, by id.
func (n *MemNetwork) reachableLocked(from uint64) []Handler {
	var hs []Handler
	for _, id := range slices.Sorted(maps.Keys(n.nodes)) {
		if id != from && !n.cut[[2]uint64{from, id}] && !n.isolated[from] && !n.isolated[id] {
			hs = append(hs, n.nodes[id].h)
		}
	}
	return hs
}

// MemTransport is one node's Transport on a MemNetwork.
type MemTransport struct {
	net *MemNetwork
	id  uint64
	h   Handler
}

var _ Transport = (*MemTransport)(nil)

// Start implements Transport: the node joins the network, and the nodes it
// can reach hear that it is back, as a restarted process's TCP peers see
// it connect.
func (t *MemTransport) Start(h Handler) error {
	t.net.mu.Lock()
	if t.net.nodes[t.id] != nil {
		t.net.mu.Unlock()
		return errors.New("quorum: a transport for this node is already on the network")
	}
	t.h = h
	t.net.nodes[t.id] = t
	peers := t.net.reachableLocked(t.id)
	t.net.mu.Unlock()
	for _, p := range peers {
		p.PeerBack(t.id)
	}
	return nil
}

// Send implements Transport. Messages travel as bytes, as on a network: the
// receiver shares no memory with the sender.
func (t *MemTransport) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		to := t.net.route(t.id, m.To)
		b, err := m.Marshal()
		if to == nil || err != nil {
			reportDropped(t.h, m)
			continue
		}
		var cp raftpb.Message
		if err := cp.Unmarshal(b); err != nil {
			reportDropped(t.h, m)
			continue
		}
		to.Step(cp)
		if m.Type == raftpb.MsgSnap {
			t.h.ReportSnapshot(m.To, raft.SnapshotFinish)
		}
	}
}

// Close implements Transport: the node leaves the network, and the nodes
// it could reach hear that it is gone, as a dead process's TCP peers see
// its connections close.
func (t *MemTransport) Close() error {
	t.net.mu.Lock()
	if t.net.nodes[t.id] != t {
		t.net.mu.Unlock()
		return nil
	}
	delete(t.net.nodes, t.id)
	peers := t.net.reachableLocked(t.id)
	t.net.mu.Unlock()
	for _, h := range peers {
		h.PeerGone(t.id)
	}
	return nil
}
