package quorum

import (
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

var testEngines = []string{"segment", "memory"}

func TestElectProposeApply(t *testing.T) {
	for _, eng := range testEngines {
		t.Run(eng, func(t *testing.T) {
			c := newCluster(t, eng, 1, 3, nil)
			l, ticks := c.waitLeader(100)
			t.Logf("leader %d active after %d ticks", l, ticks)
			want := payloads("a", 20)
			ids := map[ProposalID]string{}
			for _, p := range want {
				ids[c.propose(l, p)] = p
			}
			c.settle()
			c.requireSame(want)
			// Every proposal completed by its own entry.
			require.Len(t, c.applied[l], len(want))
			for id, index := range c.applied[l] {
				r := c.sms[l].recs
				found := false
				for _, x := range r {
					if x.Index == index {
						require.Equal(t, ids[id], x.Payload)
						found = true
					}
				}
				require.True(t, found, "proposal %d at %d", id, index)
			}
			for _, id := range c.ids {
				if id != l {
					require.Empty(t, c.applied[id], "node %d completed a proposal it did not make", id)
					require.False(t, c.nodes[id].Active())
				}
			}
			require.Empty(t, c.errs)
		})
	}
}

func TestSingleNodeLeadsAtOnce(t *testing.T) {
	c := newCluster(t, "segment", 2, 1, nil)
	c.settle()
	require.True(t, c.nodes[1].Active(), "a sole voter is its own quorum")
	c.propose(1, "x")
	c.settle()
	c.requireSame([]string{"x"})
}

func TestFailoverAndRejoin(t *testing.T) {
	for _, eng := range testEngines {
		t.Run(eng, func(t *testing.T) {
			c := newCluster(t, eng, 3, 3, nil)
			old, _ := c.waitLeader(100)
			want := payloads("a", 5)
			for _, p := range want {
				c.propose(old, p)
			}
			c.settle()
			c.isolate(old) // the leader's messages are dropped, and those to it
			l, ticks := c.waitLeader(100, old)
			t.Logf("new leader %d active %d ticks after the old one was cut off", l, ticks)
			require.NotEqual(t, old, l)
			more := payloads("b", 5)
			for _, p := range more {
				c.propose(l, p)
			}
			c.settle()
			want = append(want, more...)
			for _, id := range c.ids {
				if id != old {
					require.Equal(t, want, c.sms[id].payloads(), "node %d", id)
				}
			}
			require.Equal(t, want[:5], c.sms[old].payloads(), "the cut-off leader applied nothing new")
			c.heal()
			c.tick(3)
			c.requireSame(want)
			require.Equal(t, []uint64{l}, c.activeLeaders(), "the old leader rejoined as a follower")
		})
	}
}

func TestPartitionedLeaderNeverCommits(t *testing.T) {
	c := newCluster(t, "memory", 4, 3, nil)
	old, _ := c.waitLeader(100)
	c.propose(old, "before")
	c.settle()
	c.isolate(old)
	c.propose(old, "lost") // raft takes it: the leader does not know yet
	c.tick(DefaultElectionTicks)
	require.False(t, c.nodes[old].Active(), "a leader cut off for E ticks is not Active")
	_, err := c.nodes[old].Propose([]byte("still leader in raft"))
	require.NoError(t, err, "raft still thinks it leads: only the lease says otherwise")
	l, _ := c.waitLeader(100, old)
	c.propose(l, "after")
	c.settle()
	c.tick(50)
	require.Equal(t, []string{"before"}, c.sms[old].payloads())
	c.heal()
	c.tick(3)
	c.requireSame([]string{"before", "after"})
	require.NotContains(t, c.applied[old], ProposalID(2))
	require.NotContains(t, c.applied[old], ProposalID(3))
}

func TestSnapshotCatchUp(t *testing.T) {
	c := newCluster(t, "segment", 5, 3, func(cfg *NodeConfig) {
		cfg.SnapshotEntries = 5
		cfg.CatchUpEntries = 2
	})
	l, _ := c.waitLeader(100)
	var lag uint64
	for _, id := range c.ids {
		if id != l {
			lag = id
			break
		}
	}
	c.isolate(lag)
	want := payloads("a", 30)
	for _, p := range want {
		c.propose(l, p)
		c.settle()
	}
	c.tick(1)
	require.GreaterOrEqual(t, c.nodes[l].Status().Snapshot, uint64(25))
	require.Empty(t, c.sms[lag].payloads())
	c.heal()
	c.tick(5)
	require.Positive(t, c.snaps, "the lagging follower was sent a snapshot")
	require.Positive(t, c.nodes[lag].Status().Snapshot, "and installed it")
	c.requireSame(want)

	// The follower restarts from what it installed, and goes on.
	c.stop(lag)
	c.start(lag)
	c.settle()
	require.Equal(t, want, c.sms[lag].payloads())
	c.propose(l, "next")
	c.settle()
	c.requireSame(append(want, "next"))
}

func TestRestartReappliesCommitted(t *testing.T) {
	c := newCluster(t, "segment", 6, 3, func(cfg *NodeConfig) {
		cfg.SnapshotEntries = 7
		cfg.CatchUpEntries = 3
	})
	l, _ := c.waitLeader(100)
	want := payloads("a", 25)
	for _, p := range want {
		c.propose(l, p)
	}
	c.settle()
	c.tick(2) // followers learn the last commit index
	before := map[uint64][]rec{}
	for _, id := range c.ids {
		before[id] = c.sms[id].recs
		c.stop(id)
	}
	for _, id := range c.ids {
		c.start(id)
		for c.nodes[id].HasReady() {
			out, err := c.nodes[id].Process()
			require.NoError(t, err)
			require.Empty(t, out.Messages, "a restarted node says nothing before it ticks or hears")
			require.Empty(t, out.Applied, "entries of an earlier incarnation complete nothing")
		}
		require.True(t, equalRecs(before[id], c.sms[id].recs), "node %d: state after restart differs\nbefore %v\nafter  %v", id, before[id], c.sms[id].recs)
	}
	l, _ = c.waitLeader(100)
	c.propose(l, "next")
	c.settle()
	c.requireSame(append(want, "next"))
}

func TestRestartRefusesOtherVoters(t *testing.T) {
	c := newCluster(t, "segment", 7, 3, nil)
	c.waitLeader(100)
	c.stop(1)
	for _, tc := range []struct {
		name  string
		tweak func(*NodeConfig)
		want  error
	}{
		{"voters", func(cfg *NodeConfig) { cfg.Voters = []uint64{1, 2, 4} }, ErrVotersChanged},
		{"fewer voters", func(cfg *NodeConfig) { cfg.Voters = []uint64{1, 2} }, ErrVotersChanged},
		{"cluster id", func(cfg *NodeConfig) { cfg.ClusterID = "other" }, ErrWrongCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := c.config(1)
			tc.tweak(&cfg)
			_, err := OpenNode(cfg)
			require.ErrorIs(t, err, tc.want)
			t.Log(err)
		})
	}
	// The same voters in another order are the same voters.
	cfg := c.config(1)
	cfg.Voters = []uint64{3, 1, 2}
	n, err := OpenNode(cfg)
	require.NoError(t, err)
	require.NoError(t, n.Close())
}

func TestNotLeaderError(t *testing.T) {
	c := newCluster(t, "memory", 8, 3, nil)
	l, _ := c.waitLeader(100)
	for _, id := range c.ids {
		if id == l {
			continue
		}
		_, err := c.nodes[id].Propose([]byte("x"))
		require.ErrorIs(t, err, ErrNotLeader)
		var nle *NotLeaderError
		require.True(t, errors.As(err, &nle))
		require.Equal(t, l, nle.Leader)
	}
}

func TestNodeTransferLeadership(t *testing.T) {
	c := newCluster(t, "memory", 9, 3, nil)
	l, _ := c.waitLeader(100)
	to := c.ids[0]
	if to == l {
		to = c.ids[1]
	}
	c.nodes[l].TransferLeadership(to)
	c.settle()
	got, ticks := c.waitLeader(20)
	require.Equal(t, to, got)
	t.Logf("transfer %d -> %d: active after %d ticks", l, to, ticks)
}

func TestStatus(t *testing.T) {
	c := newCluster(t, "memory", 10, 3, nil)
	l, _ := c.waitLeader(100)
	c.propose(l, "x")
	c.settle()
	c.tick(1)
	s := c.nodes[l].Status()
	require.Equal(t, l, s.Leader)
	require.True(t, s.Active)
	require.Equal(t, []uint64{1, 2, 3}, s.Voters)
	require.Equal(t, s.Commit, s.Applied)
	require.Len(t, s.Peers, 3)
	for _, p := range s.Peers {
		require.Equal(t, s.Commit, p.Match, "peer %d", p.ID)
		require.LessOrEqual(t, p.TicksSinceContact, int64(1), "peer %d", p.ID)
	}
	f := c.nodes[c.ids[0]]
	if c.ids[0] == l {
		f = c.nodes[c.ids[1]]
	}
	require.Empty(t, f.Status().Peers)
	require.Equal(t, l, f.Status().Leader)
}

func TestDeterminism(t *testing.T) {
	run := func(seed uint64) []byte {
		c := newCluster(t, "memory", seed, 3, func(cfg *NodeConfig) { cfg.SnapshotEntries = 4; cfg.CatchUpEntries = 1 })
		l, _ := c.waitLeader(100)
		for _, p := range payloads("a", 6) {
			c.propose(l, p)
		}
		c.settle()
		c.isolate(l)
		l2, _ := c.waitLeader(100, l)
		for _, p := range payloads("b", 10) {
			c.propose(l2, p)
		}
		c.tick(3)
		c.heal()
		c.tick(20)
		return c.trace.Sum(nil)
	}
	a, b := run(42), run(42)
	require.Equal(t, a, b, "the same seed gave two traces")
	require.NotEqual(t, a, run(43), "the seed makes no difference: is the trace recording anything?")
}

func TestRejoiningFollowerDoesNotDepose(t *testing.T) {
	c := newCluster(t, "memory", 11, 3, nil)
	l, _ := c.waitLeader(100)
	term := c.nodes[l].Status().Term
	f := c.follower(l)
	c.isolate(f)
	c.tick(5 * DefaultElectionTicks) // f campaigns again and again, alone
	require.Equal(t, term, c.nodes[f].Status().Term, "pre-votes that fail do not raise the term")
	c.heal()
	// f's timer expires at the moment it is back: its pre-vote reaches the
	// others while they hear from l, and is ignored.
	c.nodes[f].Campaign()
	c.settle()
	c.tick(5 * DefaultElectionTicks)
	require.Equal(t, []uint64{l}, c.activeLeaders())
	require.Equal(t, term, c.nodes[l].Status().Term, "the leader was not deposed")
}

func TestMemoryEngineCannotRestart(t *testing.T) {
	c := newCluster(t, "memory", 12, 3, nil)
	c.waitLeader(100)
	c.stop(1)
	_, err := OpenNode(c.config(1))
	require.ErrorContains(t, err, "not durable")
}

func TestProposalIdentityAcrossRestart(t *testing.T) {
	c := newCluster(t, "segment", 13, 1, nil)
	c.settle()
	early := readAll(t, c.fs, "/n1/"+hardStateFile) // commit: the leader's empty entry
	for _, p := range payloads("old", 3) {
		c.propose(1, p) // ids 1, 2, 3 of the first incarnation
	}
	c.settle()
	require.Len(t, c.applied[1], 3)
	// A crash before the new commit index reached the disk: the entries are
	// durable, HARDSTATE is the early one. The restarted node commits the
	// old entries again only as leader, after its own first proposal,
	// whose id is 1 again.
	c.stop(1)
	require.NoError(t, engine.WriteFileAtomic(c.fs, "/n1/"+hardStateFile, early))
	c.start(1)
	n := c.nodes[1]
	require.Empty(t, c.sms[1].payloads(), "nothing is known committed yet")
	for !n.Active() {
		_, err := n.Process()
		require.NoError(t, err)
	}
	id, err := n.Propose([]byte("new"))
	require.NoError(t, err)
	require.Equal(t, ProposalID(1), id, "sequence numbers restart with the incarnation")
	var applied []AppliedProposal
	for n.HasReady() {
		out, err := n.Process()
		require.NoError(t, err)
		applied = append(applied, out.Applied...)
	}
	require.Equal(t, append(payloads("old", 3), "new"), c.sms[1].payloads())
	require.Len(t, applied, 1, "only its own entry completes proposal 1: %v", applied)
	require.Equal(t, c.sms[1].recs[3].Index, applied[0].Index)
}

func readAll(t *testing.T, fs vfs.FS, path string) []byte {
	f, err := fs.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return b
}

// A leader killed is seen at once by its followers (their connections from
// it close): they elect a new one within a few ticks (1 + 2 × rank), not
// after a whole election timeout of E to 2E ticks.
func TestLeaderGoneElectsSooner(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		c := newCluster(t, "memory", seed, 3, nil)
		old, _ := c.waitLeader(100)
		c.propose(old, "a")
		c.settle()
		c.stop(old)
		for _, id := range c.ids {
			if id != old {
				c.nodes[id].PeerGone(old)
			}
		}
		l, ticks := c.waitLeader(4, old)
		require.NotEqual(t, old, l, "seed %d", seed)
		c.propose(l, "b")
		c.settle()
		for _, id := range c.ids {
			if id != old {
				require.Equal(t, []string{"a", "b"}, c.sms[id].payloads(), "seed %d node %d", seed, id)
			}
		}
		t.Logf("seed %d: leader %d gone, %d active %d ticks later", seed, old, l, ticks)
		c.closeAll()
	}
}

// A connection that ends while its leader lives on deposes no one: the
// other follower, which still hears from the leader, refuses the pre-vote,
// and the leader's next message restores the lease of the one that lost it.
func TestPeerGoneOfALiveLeaderDeposesNoOne(t *testing.T) {
	c := newCluster(t, "memory", 5, 3, nil)
	l, _ := c.waitLeader(100)
	term := c.nodes[l].Status().Term
	f := c.follower(l)
	c.nodes[f].PeerGone(l)
	c.nodes[f].PeerGone(f) // never about itself
	require.Equal(t, []uint64{l}, c.nodes[f].Gone())
	c.tick(5 * DefaultElectionTicks)
	require.Empty(t, c.nodes[f].Gone(), "the leader's next message shows it alive")
	require.Equal(t, []uint64{l}, c.activeLeaders())
	require.Equal(t, term, c.nodes[l].Status().Term, "the leader was not deposed")
	c.nodes[l].PeerGone(f) // a leader ignores it
	c.tick(2)
	require.Equal(t, []uint64{l}, c.activeLeaders())
}

// The follower whose turn comes first may be behind: the other refuses it
// its vote, and wins two ticks later, with every committed entry.
func TestLeaderGoneBehindFollowerDoesNotWin(t *testing.T) {
	c := newCluster(t, "memory", 3, 3, nil)
	old, _ := c.waitLeader(100)
	var first, second uint64 // the surviving followers, by id
	for _, id := range c.ids {
		switch {
		case id == old:
		case first == 0:
			first = id
		default:
			second = id
		}
	}
	c.cut[[2]uint64{old, first}] = true // first misses what follows
	c.propose(old, "a")
	c.settle()
	c.stop(old)
	c.heal()
	c.nodes[first].PeerGone(old)
	c.nodes[second].PeerGone(old)
	l, ticks := c.waitLeader(6, old)
	require.Equal(t, second, l, "the follower with the committed entry leads")
	require.GreaterOrEqual(t, ticks, 3)
	c.settle()
	require.Equal(t, []string{"a"}, c.sms[first].payloads())
}

// A follower killed and started again is gone until it connects again,
// though it may send this node nothing (it talks to its leader only).
func TestPeerBackIsNotGone(t *testing.T) {
	c := newCluster(t, "memory", 7, 3, nil)
	l, _ := c.waitLeader(100)
	f := c.follower(l)
	var other uint64
	for _, id := range c.ids {
		if id != l && id != f {
			other = id
		}
	}
	c.nodes[other].PeerGone(f)
	c.nodes[other].PeerGone(l)
	require.ElementsMatch(t, []uint64{f, l}, c.nodes[other].Gone())
	c.nodes[other].PeerBack(f)
	require.Equal(t, []uint64{l}, c.nodes[other].Gone())
}
