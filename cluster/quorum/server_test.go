package quorum

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/clock"
)

// lockedSM is a testSM the test can read while a Server applies to it.
type lockedSM struct {
	mu sync.Mutex
	sm testSM
}

func (s *lockedSM) Apply(i uint64, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sm.Apply(i, p)
}

func (s *lockedSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sm.Snapshot()
}

func (s *lockedSM) Restore(i uint64, d []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sm.Restore(i, d)
}

func (s *lockedSM) payloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sm.payloads()
}

const testTick = 50 * time.Millisecond

// servers is a three-voter quorum of Servers on a MemNetwork, ticked by a
// manual clock.
type servers struct {
	t       *testing.T
	clk     *clock.Manual
	net     *MemNetwork
	fs      vfs.FS
	ids     []uint64
	servers map[uint64]*Server
	sms     map[uint64]*lockedSM
}

func newServers(t *testing.T, n int) *servers {
	ss := &servers{
		t: t, clk: clock.NewManual(time.Unix(1_000_000, 0)), net: NewMemNetwork(), fs: vfs.NewMem(),
		servers: map[uint64]*Server{}, sms: map[uint64]*lockedSM{},
	}
	for i := range n {
		ss.ids = append(ss.ids, uint64(i+1))
	}
	for _, id := range ss.ids {
		ss.start(id)
	}
	t.Cleanup(func() {
		for _, s := range ss.servers {
			s.Close()
		}
	})
	return ss
}

func (ss *servers) start(id uint64) {
	sm := &lockedSM{}
	s, err := NewServer(ServerConfig{
		Node: NodeConfig{
			NodeID: id, Voters: ss.ids, ClusterID: "test", Dir: fmt.Sprintf("/n%d", id), FS: ss.fs,
			Engine: "segment", Rand: rand.New(rand.NewPCG(7, id)), StateMachine: sm,
		},
		Transport:    ss.net.Transport(id),
		Clock:        ss.clk,
		TickInterval: testTick,
	})
	require.NoError(ss.t, err)
	ss.servers[id], ss.sms[id] = s, sm
}

func (ss *servers) kill(id uint64) {
	require.NoError(ss.t, ss.servers[id].Close())
	delete(ss.servers, id)
}

// tick moves the clock one tick and waits until every server has taken it.
func (ss *servers) tick() {
	want := map[uint64]uint64{}
	for id, s := range ss.servers {
		want[id] = s.Status().Ticks + 1
	}
	ss.clk.Advance(testTick)
	require.Eventually(ss.t, func() bool {
		for id, s := range ss.servers {
			if s.Status().Ticks < want[id] {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}

// tickUntil ticks until cond holds and returns how many ticks it took.
func (ss *servers) tickUntil(what string, max int, cond func() bool) int {
	for i := 0; i <= max; i++ {
		if cond() {
			return i
		}
		ss.tick()
	}
	ss.t.Fatalf("%s: not within %d ticks", what, max)
	return 0
}

// active lists the servers that are Active leaders.
func (ss *servers) active() []uint64 {
	var ids []uint64
	for _, id := range ss.ids {
		if s := ss.servers[id]; s != nil && s.Active() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (ss *servers) waitLeader(max int) (uint64, int) {
	var l uint64
	n := ss.tickUntil("an active leader", max, func() bool {
		a := ss.active()
		if len(a) == 1 {
			l = a[0]
		}
		return len(a) == 1
	})
	return l, n
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestServerProposeAndFailover(t *testing.T) {
	ss := newServers(t, 3)
	l, ticks := ss.waitLeader(100)
	t.Logf("leader %d active after %d ticks", l, ticks)
	ctx := ctxTimeout(t)
	index, err := ss.servers[l].Propose(ctx, []byte("a"))
	require.NoError(t, err)
	for _, id := range ss.ids {
		require.NoError(t, ss.servers[id].WaitApplied(ctx, index))
		require.Equal(t, []string{"a"}, ss.sms[id].payloads())
		if id != l {
			_, err := ss.servers[id].Propose(ctx, []byte("x"))
			require.ErrorIs(t, err, ErrNotLeader)
			var nle *NotLeaderError
			require.True(t, errors.As(err, &nle))
			require.Equal(t, l, nle.Leader, "the error names the leader")
			lead, _ := ss.servers[id].Leader()
			require.Equal(t, l, lead)
		}
	}

	ss.kill(l)
	var next uint64
	var index2 uint64
	failover := ss.tickUntil("a new leader accepts a proposal", 5*DefaultElectionTicks, func() bool {
		for _, id := range ss.active() {
			i, err := ss.servers[id].Propose(ctx, []byte("b"))
			if err == nil {
				next, index2 = id, i
				return true
			}
		}
		return false
	})
	t.Logf("leader %d closed; %d accepted a proposal %d ticks later (E = %d)", l, next, failover, DefaultElectionTicks)
	require.NotEqual(t, l, next)
	for id, s := range ss.servers {
		require.Equal(t, []uint64{l}, s.Gone(), "node %d: the closed leader is gone", id)
	}
	for id := range ss.servers {
		require.NoError(t, ss.servers[id].WaitApplied(ctx, index2))
		require.Equal(t, []string{"a", "b"}, ss.sms[id].payloads())
	}

	// The old leader comes back from its disk and catches up.
	ss.start(l)
	ss.tickUntil("the old leader catches up", 20, func() bool {
		return slices.Equal(ss.sms[l].payloads(), []string{"a", "b"})
	})
	lead, _ := ss.servers[l].Leader()
	require.Equal(t, next, lead)
	for id, s := range ss.servers {
		require.Empty(t, s.Gone(), "node %d: the restarted node is back", id)
	}
}

func TestServerPendingProposalFailsOnLeaderChange(t *testing.T) {
	ss := newServers(t, 3)
	l, _ := ss.waitLeader(100)
	ss.net.Isolate(l)
	ctx := ctxTimeout(t)
	errc := make(chan error, 1)
	go func() {
		_, err := ss.servers[l].Propose(ctx, []byte("lost"))
		errc <- err
	}()
	// Still Active for up to E ticks: the proposal waits.
	require.Eventually(t, func() bool { return pending(ss.servers[l]) == 1 }, 10*time.Second, time.Millisecond)
	ss.tickUntil("the others elect a leader", 5*DefaultElectionTicks, func() bool {
		a := ss.active()
		return len(a) == 1 && a[0] != l
	})
	require.False(t, ss.servers[l].Active(), "a leader cut off for E ticks is not Active")
	_, err := ss.servers[l].Propose(ctx, []byte("x"))
	require.ErrorIs(t, err, ErrNotLeader, "and fails proposals at once")
	ss.net.Heal()
	ss.tickUntil("the old leader hears of the new term", 20, func() bool {
		select {
		case err := <-errc:
			require.ErrorIs(t, err, ErrLeadershipLost)
			return true
		default:
			return false
		}
	})
}

func TestServerTransferLeadership(t *testing.T) {
	ss := newServers(t, 3)
	l, _ := ss.waitLeader(100)
	ctx := ctxTimeout(t)
	_, err := ss.servers[l].Propose(ctx, []byte("a"))
	require.NoError(t, err)
	to := ss.ids[0]
	if to == l {
		to = ss.ids[1]
	}
	other := ss.ids[2]
	if other == l || other == to {
		other = ss.ids[1]
	}
	err = ss.servers[other].TransferLeadership(ctx, to)
	require.ErrorIs(t, err, ErrNotLeader, "only the leader hands over")

	errc := make(chan error, 1)
	go func() { errc <- ss.servers[l].TransferLeadership(ctx, to) }()
	ticks := ss.tickUntil("the transfer completes", 2*DefaultElectionTicks, func() bool {
		select {
		case err := <-errc:
			require.NoError(t, err)
			return true
		default:
			return false
		}
	})
	t.Logf("leadership %d -> %d in %d ticks", l, to, ticks)
	ss.tickUntil("the new leader is active", 5, func() bool { return slices.Equal(ss.active(), []uint64{to}) })
	_, err = ss.servers[to].Propose(ctx, []byte("b"))
	require.NoError(t, err)
	require.NoError(t, ss.servers[l].Close(), "controlled shutdown after the transfer")
	delete(ss.servers, l)
}

func TestServerClosed(t *testing.T) {
	ss := newServers(t, 1)
	s := ss.servers[1]
	ctx := ctxTimeout(t)
	i, err := s.Propose(ctx, []byte("a"))
	require.NoError(t, err, "a sole voter serves at once")
	require.NoError(t, s.WaitApplied(ctx, i))
	require.NoError(t, s.Close())
	delete(ss.servers, 1)
	_, err = s.Propose(ctx, []byte("b"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.WaitApplied(ctx, i+10), ErrClosed)
	require.False(t, s.Active())
	require.NoError(t, s.Close(), "a second Close does nothing")
}

// pending is how many proposals wait on s's loop.
func pending(s *Server) int {
	ch := make(chan int, 1)
	if s.call(context.Background(), func() { ch <- len(s.proposals) }) != nil {
		return -1
	}
	return <-ch
}

// TestServerOnFail: a node whose disk fails (here its syncs) stops for
// good, and the server says so once through OnFail, so that a broker that
// is a voter can stop instead of serving a metadata image that no longer
// moves; calls then fail with the error.
func TestServerOnFail(t *testing.T) {
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if failing.Load() {
				return errorfs.ErrInjected
			}
		}
		return nil
	}))
	failed := make(chan error, 4)
	s, err := NewServer(ServerConfig{
		Node: NodeConfig{
			NodeID: 1, Voters: []uint64{1}, ClusterID: "test", Dir: "/n1", FS: fs,
			Engine: "segment", Rand: rand.New(rand.NewPCG(7, 1)), StateMachine: &lockedSM{},
		},
		Transport: NewMemNetwork().Transport(1),
		Clock:     clock.NewManual(time.Unix(1_000_000, 0)),
		OnFail:    func(err error) { failed <- err },
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ctx := ctxTimeout(t)
	_, err = s.Propose(ctx, []byte("a"))
	require.NoError(t, err, "the disk works")
	failing.Store(true)
	_, err = s.Propose(ctx, []byte("b"))
	require.ErrorIs(t, err, errorfs.ErrInjected)
	select {
	case err := <-failed:
		require.ErrorIs(t, err, errorfs.ErrInjected)
	case <-ctx.Done():
		t.Fatal("OnFail was not called")
	}
	_, err = s.Propose(ctx, []byte("c"))
	require.ErrorIs(t, err, errorfs.ErrInjected, "a stopped node refuses what follows")
	assert.Empty(t, failed, "OnFail is called once")
}
