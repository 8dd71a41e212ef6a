package quorum

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// listen opens a controller port on 127.0.0.1 for each id.
func listen(t *testing.T, ids ...uint64) (map[uint64]net.Listener, map[uint64]string) {
	lns, addrs := map[uint64]net.Listener{}, map[uint64]string{}
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		lns[id], addrs[id] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// serve accepts on ln as a broker sharing the port would: raft connections
// to tr, anything else is counted as Kafka and closed.
func serve(ln net.Listener, tr *TCPTransport, kafka func(net.Conn)) {
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c, isRaft, err := PeekConn(nc, time.Second)
				switch {
				case err != nil:
					nc.Close()
				case isRaft:
					tr.ServeConn(c)
				case kafka != nil:
					kafka(c)
				default:
					c.Close()
				}
			}()
		}
	}()
}

func newTCP(t *testing.T, id uint64, cluster string, voters map[uint64]string, log *slog.Logger) *TCPTransport {
	tr, err := NewTCPTransport(TCPConfig{
		NodeID: id, ClusterID: cluster, Voters: voters, Logger: log,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestServersOverTCP(t *testing.T) {
	ids := []uint64{1, 2, 3}
	lns, addrs := listen(t, ids...)
	fs := vfs.NewMem()
	const tick = 20 * time.Millisecond
	srv := map[uint64]*Server{}
	for _, id := range ids {
		tr := newTCP(t, id, "tcp-test", addrs, nil)
		serve(lns[id], tr, nil)
		s, err := NewServer(ServerConfig{
			Node: NodeConfig{
				NodeID: id, Voters: ids, ClusterID: "tcp-test", Dir: fmt.Sprintf("/n%d", id), FS: fs,
				Engine: "segment", Rand: rand.New(rand.NewPCG(1, id)), StateMachine: &lockedSM{},
			},
			Transport:    tr,
			TickInterval: tick,
		})
		require.NoError(t, err)
		srv[id] = s
		t.Cleanup(func() { s.Close() })
	}
	activeLeader := func() uint64 {
		var l []uint64
		for id, s := range srv {
			if s.Active() {
				l = append(l, id)
			}
		}
		if len(l) == 1 {
			return l[0]
		}
		return 0
	}
	var l uint64
	require.Eventually(t, func() bool { l = activeLeader(); return l != 0 }, 20*time.Second, tick)
	ctx := ctxTimeout(t)
	index, err := srv[l].Propose(ctx, []byte("a"))
	require.NoError(t, err)
	for _, s := range srv {
		require.NoError(t, s.WaitApplied(ctx, index))
	}

	// Kill the leader: its server, and its port.
	killed := time.Now()
	startTicks := srv[l%3+1].Status().Ticks
	require.NoError(t, srv[l].Close())
	lns[l].Close()
	delete(srv, l)
	var next uint64
	require.Eventually(t, func() bool {
		next = activeLeader()
		if next == 0 {
			return false
		}
		_, err := srv[next].Propose(ctx, []byte("b"))
		return err == nil
	}, 20*time.Second, tick)
	t.Logf("over TCP: leader %d closed, %d accepted a proposal %d ticks (%v at %v a tick) later",
		l, next, srv[l%3+1].Status().Ticks-startTicks, time.Since(killed).Round(time.Millisecond), tick)

	// A controlled hand-over to the remaining follower.
	var to uint64
	for id := range srv {
		if id != next {
			to = id
		}
	}
	require.NoError(t, srv[next].TransferLeadership(ctx, to))
	require.Eventually(t, func() bool { return activeLeader() == to }, 20*time.Second, tick)
	_, err = srv[to].Propose(ctx, []byte("c"))
	require.NoError(t, err)
}

// handler records what a transport delivers.
type handler struct {
	mu          sync.Mutex
	msgs        []raftpb.Message
	unreachable int
	snapFailed  int
	snapDone    int
	gone, back  []uint64
}

func (h *handler) Step(m raftpb.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, m)
}

func (h *handler) ReportUnreachable(uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreachable++
}

func (h *handler) PeerGone(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gone = append(h.gone, id)
}

func (h *handler) PeerBack(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.back = append(h.back, id)
}

func (h *handler) peers() (gone, back []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.gone), slices.Clone(h.back)
}

func (h *handler) ReportSnapshot(_ uint64, s raft.SnapshotStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s == raft.SnapshotFailure {
		h.snapFailed++
	} else {
		h.snapDone++
	}
}

func (h *handler) count() (msgs, unreachable, snapFailed, snapDone int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs), h.unreachable, h.snapFailed, h.snapDone
}

func TestTCPDelivers(t *testing.T) {
	lns, addrs := listen(t, 1, 2)
	a, b := newTCP(t, 1, "c", addrs, nil), newTCP(t, 2, "c", addrs, nil)
	serve(lns[2], b, nil)
	ha, hb := &handler{}, &handler{}
	require.NoError(t, a.Start(ha))
	require.NoError(t, b.Start(hb))
	snap := raftpb.Snapshot{Data: bytes.Repeat([]byte("s"), 1<<20), Metadata: raftpb.SnapshotMetadata{Index: 9, Term: 2}}
	require.Eventually(t, func() bool {
		a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}})
		n, _, _, _ := hb.count()
		return n > 0
	}, 10*time.Second, 5*time.Millisecond)
	a.Send([]raftpb.Message{{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 2, Snapshot: &snap}})
	require.Eventually(t, func() bool {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		last := hb.msgs[len(hb.msgs)-1]
		return last.Type == raftpb.MsgSnap && bytes.Equal(last.Snapshot.Data, snap.Data)
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { _, _, _, done := ha.count(); return done == 1 }, 10*time.Second, time.Millisecond,
		"the sender reports the snapshot delivered")
}

// A peer that connects is back; its connection closing (a killed process)
// says it is gone; this transport's own closing says nothing.
func TestTCPReportsPeersGoneAndBack(t *testing.T) {
	lns, addrs := listen(t, 1, 2)
	a := newTCP(t, 1, "c", addrs, nil)
	b := newTCP(t, 2, "c", addrs, nil)
	serve(lns[2], b, nil)
	ha, hb := &handler{}, &handler{}
	require.NoError(t, b.Start(hb))
	require.NoError(t, a.Start(ha)) // a dials b
	require.Eventually(t, func() bool {
		a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}})
		_, back := hb.peers()
		return len(back) > 0
	}, 10*time.Second, 5*time.Millisecond)
	gone, back := hb.peers()
	require.Empty(t, gone)
	require.Equal(t, uint64(1), back[0])
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { gone, _ := hb.peers(); return slices.Equal(gone, []uint64{1}) }, 10*time.Second, time.Millisecond)

	// a again, connected; then b closes its own transport.
	a = newTCP(t, 1, "c", addrs, nil)
	require.NoError(t, a.Start(&handler{}))
	require.Eventually(t, func() bool {
		a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}})
		_, back := hb.peers()
		return len(back) > 1
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, b.Close())
	gone, _ = hb.peers()
	require.Equal(t, []uint64{1}, gone, "closing its own transport reports nothing")
}

func TestTCPRefusesMismatches(t *testing.T) {
	for _, tc := range []struct {
		name             string
		clusterA, clustB string
		votersB          func(map[uint64]string) map[uint64]string
		wantA, wantB     string
	}{
		{
			name: "cluster id", clusterA: "alpha", clustB: "beta",
			wantA: "cluster id mismatch: local alpha, peer beta",
			wantB: "cluster id mismatch: local beta, peer alpha",
		},
		{
			name: "voters", clusterA: "c", clustB: "c",
			votersB: func(v map[uint64]string) map[uint64]string {
				w := map[uint64]string{1: v[1], 2: v[2], 3: "127.0.0.1:1"}
				return w
			},
			wantA: "voter list mismatch: local voters [1 2]",
			wantB: "voter list mismatch: local voters [1 2 3]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lns, addrs := listen(t, 1, 2)
			var logA, logB logBuffer
			vb := addrs
			if tc.votersB != nil {
				vb = tc.votersB(addrs)
			}
			a := newTCP(t, 1, tc.clusterA, addrs, logA.logger())
			b := newTCP(t, 2, tc.clustB, vb, logB.logger())
			serve(lns[1], a, nil)
			serve(lns[2], b, nil)
			ha, hb := &handler{}, &handler{}
			require.NoError(t, a.Start(ha))
			require.NoError(t, b.Start(hb))
			require.Eventually(t, func() bool {
				a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2}})
				return strings.Contains(logA.String(), tc.wantA) && strings.Contains(logB.String(), tc.wantB)
			}, 10*time.Second, 5*time.Millisecond, "dialer log:\n%s\nacceptor log:\n%s", &logA, &logB)
			n, _, _, _ := hb.count()
			require.Zero(t, n, "nothing was delivered")
			require.Eventually(t, func() bool { _, unreachable, _, _ := ha.count(); return unreachable > 0 },
				10*time.Second, time.Millisecond, "the sender hears its messages were lost")
			require.Equal(t, 1, strings.Count(logA.String(), "raft connection refused: "+tc.wantA), "the dialer says it once, not at every retry:\n%s", &logA)
			require.Equal(t, 1, strings.Count(logB.String(), "refused a raft connection: "+tc.wantB), "so does the acceptor:\n%s", &logB)
		})
	}
}

func TestTCPQueueFullDrops(t *testing.T) {
	// A peer that accepts nothing: every message waits, then is dropped.
	tr, err := NewTCPTransport(TCPConfig{NodeID: 1, ClusterID: "c", Voters: map[uint64]string{1: "127.0.0.1:1", 2: "127.0.0.1:1"}, QueueSize: 4})
	require.NoError(t, err)
	defer tr.Close()
	h := &handler{}
	// Not started: nothing drains the queue.
	tr.h = h
	var msgs []raftpb.Message
	for range 6 {
		msgs = append(msgs, raftpb.Message{Type: raftpb.MsgApp, From: 1, To: 2})
	}
	msgs = append(msgs, raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{}})
	tr.Send(msgs)
	_, unreachable, snapFailed, _ := h.count()
	require.Equal(t, 3, unreachable, "4 queued, 3 dropped")
	require.Equal(t, 1, snapFailed, "a dropped snapshot is reported failed")
}

func TestPeekConn(t *testing.T) {
	magic := Magic // a variable: the conversion wraps, as a reader's would
	require.Negative(t, int32(magic), "Magic must never read as a Kafka frame length")
	for _, tc := range []struct {
		name  string
		first []byte
		raft  bool
	}{
		{"raft", binary.BigEndian.AppendUint32(nil, Magic), true},
		{"kafka", binary.BigEndian.AppendUint32(nil, 42), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			payload := append(tc.first, "rest of the stream"...)
			go func() { client.Write(payload); client.Close() }()
			c, isRaft, err := PeekConn(server, time.Second)
			require.NoError(t, err)
			require.Equal(t, tc.raft, isRaft)
			got, _ := io.ReadAll(c)
			require.Equal(t, payload, got, "the peeked bytes are replayed")
		})
	}
}

func TestParseVoters(t *testing.T) {
	v, err := ParseVoters("1@a:9093, 2@b:9093,3@[::1]:9093")
	require.NoError(t, err)
	require.Equal(t, map[uint64]string{1: "a:9093", 2: "b:9093", 3: "[::1]:9093"}, v)
	for _, bad := range []string{"", "1@a", "x@a:1", "0@a:1", "1@a:1,1@b:1", "a:1"} {
		_, err := ParseVoters(bad)
		require.Error(t, err, bad)
	}
}

func TestVoterDigest(t *testing.T) {
	require.Equal(t, VoterDigest([]uint64{1, 2, 3}), VoterDigest([]uint64{3, 1, 2}))
	require.NotEqual(t, VoterDigest([]uint64{1, 2, 3}), VoterDigest([]uint64{1, 2, 4}))
}

// A dialer backing off from a peer that was down dials again as soon as
// that peer dials in: a voter restarted after a long outage is caught up in
// milliseconds, not after the longest backoff.
func TestTCPRedialsWhenThePeerDialsIn(t *testing.T) {
	lns, addrs := listen(t, 1, 2)
	lns[2].Close() // node 2 is down
	slow := func(id uint64) *TCPTransport {
		tr, err := NewTCPTransport(TCPConfig{NodeID: id, ClusterID: "c", Voters: addrs, BackoffMin: time.Minute, BackoffMax: time.Minute})
		require.NoError(t, err)
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	a := slow(1)
	serve(lns[1], a, nil)
	ha := &handler{}
	require.NoError(t, a.Start(ha))
	time.Sleep(100 * time.Millisecond) // a's first dial has failed: it waits a minute

	ln, err := net.Listen("tcp", addrs[2])
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	b := slow(2)
	serve(ln, b, nil)
	hb := &handler{}
	require.NoError(t, b.Start(hb))
	require.Eventually(t, func() bool {
		a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}})
		n, _, _, _ := hb.count()
		return n > 0
	}, 10*time.Second, 5*time.Millisecond, "node 1 reaches node 2 once node 2 dials in, within its minute of backoff")
}
