package group_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/group"
	"github.com/minikafka/minikafka/broker/group/grouptest"
	"github.com/minikafka/minikafka/engine"
	_ "github.com/minikafka/minikafka/engines/badger"
	"github.com/minikafka/minikafka/engines/memory"
)

// groupState is one group as clients and the offset expiry see it.
type groupState struct {
	Desc    group.Description
	Offsets []group.Commit
}

// snapshot is every group the coordinator knows, for comparing states
// across compactions, restarts and crashes.
func snapshot(t *testing.T, c *group.Coordinator) map[string]groupState {
	t.Helper()
	out := map[string]groupState{}
	for _, g := range c.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups {
		d, ok := c.Describe(g.Group)
		require.True(t, ok, "group %s listed but not described", g.Group)
		out[g.Group] = groupState{Desc: d, Offsets: group.CommittedOffsets(c, g.Group)}
	}
	return out
}

// topicsTU: topics "t" and "u" with 12 partitions each; no compaction
// unless the test asks for one.
func topicsTU(c *group.Config) {
	c.PartitionExists = func(topic string, p int32) bool {
		return (topic == "t" || topic == "u") && p >= 0 && p < 12
	}
	c.CompactMinBytes = -1
}

func durableEngines(t *testing.T, customFS bool) []string {
	t.Helper()
	var out []string
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		if d.Caps.Durable && (!customFS || d.Caps.CustomFS) {
			out = append(out, name)
		}
	}
	return out
}

func openEngine(t *testing.T, name, dir string, opts engine.Options) engine.LogEngine {
	t.Helper()
	eng, err := engine.Open(name, dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	return eng
}

// newEnvOn is newEnv over a grouptest.Log on eng.
func newEnvOn(t *testing.T, eng engine.LogEngine, mutate ...func(*group.Config)) *env {
	t.Helper()
	lg := grouptest.NewLog(eng)
	e := newEnv(t, append(mutate, func(c *group.Config) { c.Log = lg })...)
	e.log = lg
	return e
}

// useEngine points the env's next open at a fresh grouptest.Log over eng.
func (e *env) useEngine(eng engine.LogEngine) {
	e.log = grouptest.NewLog(eng)
	e.cfg.Log = e.log
}

func commitAll(t *testing.T, e *env, g, member string, gen int32, offs ...tpo) {
	t.Helper()
	codes := commitCodes(e.c.OffsetCommit(commitReq(g, member, gen, offs...)))
	require.Equal(t, make([]int16, len(offs)), codes, "commit to %s", g)
}

func leaveAll(t *testing.T, e *env, g string, ids ...string) {
	t.Helper()
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, g
	for _, id := range ids {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		leave.Members = append(leave.Members, m)
	}
	require.Zero(t, e.c.LeaveGroup(leave).ErrorCode)
}

// buildState gives the coordinator some of everything __consumer_offsets
// holds: a Stable group whose offsets were committed over many rounds,
// offsets of a deleted topic (tombstoned), an offsets-only group, a deleted
// group, and a group whose members all left.
func buildState(t *testing.T, e *env, rounds int) {
	t.Helper()
	ids, gen := e.stable("g", 2)
	for r := range rounds {
		var offs []tpo
		for p := range int32(12) {
			offs = append(offs, tpo{"t", p, int64(r*100) + int64(p)})
		}
		commitAll(t, e, "g", ids[r%2], gen, offs...)
		e.clk.Advance(time.Second) // commit times differ; each member commits every 2 s
	}
	commitAll(t, e, "g", ids[0], gen, tpo{"u", 0, 5})
	e.c.TopicDeleted("u")
	commitAll(t, e, "simple", "", -1, tpo{"t", 3, 33})
	commitAll(t, e, "simple", "", -1, tpo{"t", 3, 34})
	commitAll(t, e, "gone", "", -1, tpo{"t", 1, 1})
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"gone"}
	require.Zero(t, e.c.DeleteGroups(context.Background(), del).Groups[0].ErrorCode)
	left, lgen := e.stable("left", 1)
	commitAll(t, e, "left", left[0], lgen, tpo{"t", 7, 70})
	leaveAll(t, e, "left", left...)
}

// TestCompactionKeepsState: on every engine, a compaction leaves one record
// per live key, the running coordinator unchanged, and a log whose replay
// gives exactly what replaying the uncompacted log gave.
func TestCompactionKeepsState(t *testing.T) {
	for _, name := range append([]string{memory.Name}, durableEngines(t, false)...) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			eng := openEngine(t, name, dir, engine.Options{})
			e := newEnvOn(t, eng, topicsTU)
			reopen := func() {
				t.Helper()
				if name == memory.Name {
					e.restart()
					return
				}
				require.NoError(t, e.c.Close())
				require.NoError(t, eng.Close())
				eng = openEngine(t, name, dir, engine.Options{})
				e.useEngine(eng)
				e.open()
			}
			buildState(t, e, 20)
			want := snapshot(t, e.c)
			require.ElementsMatch(t, []string{"g", "simple", "left"}, keys(want))
			require.Len(t, want["g"].Offsets, 12, "the deleted topic's offset is gone")
			assert.Equal(t, group.Stable, want["g"].Desc.State)
			assert.Equal(t, group.Empty, want["left"].Desc.State)
			reopen()
			require.Equal(t, want, snapshot(t, e.c), "replay without compaction: the reference")

			before := e.c.LogStats()
			require.Equal(t, 13+1+2, before.LiveKeys, "g: metadata and 12 offsets; simple: 1 offset; left: metadata and 1 offset")
			require.NoError(t, e.c.Compact(context.Background()))
			after := e.c.LogStats()
			assert.Equal(t, before.EndOffset, after.StartOffset, "the log starts at the copy")
			assert.Equal(t, int64(before.LiveKeys), after.EndOffset-after.StartOffset, "one record per live key")
			assert.Equal(t, before.LiveKeys, after.LiveKeys)
			assert.Equal(t, 1, after.Compactions)
			assert.Less(t, after.Bytes, before.Bytes/4)
			assert.Equal(t, want, snapshot(t, e.c), "the running coordinator is unchanged")

			reopen()
			assert.Equal(t, want, snapshot(t, e.c), "replay of the compacted log")
			st := e.c.LogStats()
			assert.Equal(t, [4]int64{after.StartOffset, after.EndOffset, after.Bytes, int64(after.LiveKeys)},
				[4]int64{st.StartOffset, st.EndOffset, st.Bytes, int64(st.LiveKeys)}, "what Open finds is what the compaction left")

			// The coordinator goes on over the compacted log.
			ids := want["g"].Desc.Members
			commitAll(t, e, "g", ids[0].MemberID, want["g"].Desc.Generation, tpo{"t", 0, 9999})
			reopen()
			assert.Equal(t, []int64{9999, 1901}, e.fetch("g", 0, 1))
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// crashable is a coordinator over an engine on a crashable filesystem;
// crash abandons it (no Close of anything) and opens another over what a
// power loss at that instant leaves: the synced data only.
type crashable struct {
	t    *testing.T
	e    *env
	name string
	fs   *vfs.MemFS
}

func newCrashable(t *testing.T, name string, mutate ...func(*group.Config)) *crashable {
	fs := vfs.NewCrashableMem()
	eng := openEngine(t, name, "/offsets", engine.Options{FS: fs})
	e := newEnvOn(t, eng, append([]func(*group.Config){topicsTU}, mutate...)...)
	return &crashable{t: t, e: e, name: name, fs: fs}
}

func (c *crashable) crash() {
	c.t.Helper()
	c.fs = c.fs.CrashClone(vfs.CrashCloneCfg{})
	c.e.useEngine(openEngine(c.t, c.name, "/offsets", engine.Options{FS: c.fs}))
	c.e.open()
}

// TestCompactionCrashBetweenCopyAndDelete: the copy is durable, the
// DeleteBefore does not happen (it fails, then the machine loses power).
// Replay of the old log followed by the whole copy gives the same state;
// the next compaction completes, and a power loss right after it keeps the
// state too.
func TestCompactionCrashBetweenCopyAndDelete(t *testing.T) {
	for _, name := range durableEngines(t, true) {
		t.Run(name, func(t *testing.T) {
			c := newCrashable(t, name)
			e := c.e
			buildState(t, e, 20)
			want := snapshot(t, e.c)
			before := e.c.LogStats()

			e.log.FailDeleteBefore(grouptest.ErrInjected)
			require.ErrorIs(t, e.c.Compact(context.Background()), grouptest.ErrInjected)
			copied := e.c.LogStats()
			require.Equal(t, before.StartOffset, copied.StartOffset, "nothing deleted")
			require.Equal(t, before.EndOffset+int64(before.LiveKeys), copied.EndOffset, "the copy is in the log")
			assert.Zero(t, copied.Compactions)

			c.crash()
			assert.Equal(t, want, snapshot(t, e.c), "old log + complete copy")
			st := e.c.LogStats()
			assert.Equal(t, [2]int64{before.StartOffset, copied.EndOffset}, [2]int64{st.StartOffset, st.EndOffset}, "the copy was durable")

			require.NoError(t, e.c.Compact(context.Background()))
			c.crash()
			assert.Equal(t, want, snapshot(t, e.c), "a power loss right after the DeleteBefore")
			st = e.c.LogStats()
			assert.Equal(t, int64(before.LiveKeys), st.EndOffset-st.StartOffset)
		})
	}
}

// TestCompactionCrashDuringCopy: the machine loses power while the copy is
// appended but not yet durable (a random share of it survives, torn where
// the engine tears it): replay gives the same state whatever survived.
func TestCompactionCrashDuringCopy(t *testing.T) {
	for _, name := range durableEngines(t, true) {
		t.Run(name, func(t *testing.T) {
			c := newCrashable(t, name)
			e := c.e
			buildState(t, e, 3)
			// Enough live bytes for a copy of several batches: 30 groups
			// with 12 offsets carrying 1 KiB of metadata each.
			md := strings.Repeat("m", 1024)
			for g := range 30 {
				req := commitReq(fmt.Sprintf("big-%d", g), "", -1)
				for p := range int32(12) {
					req = appendCommit(req, "t", p, int64(g), md)
				}
				require.Equal(t, make([]int16, 12), commitCodes(e.c.OffsetCommit(req)))
			}
			want := snapshot(t, e.c)
			before := e.c.LogStats()

			e.log.HoldDurable()
			done := make(chan error, 1)
			go func() { done <- e.c.Compact(context.Background()) }()
			require.Eventually(t, func() bool {
				return e.c.LogStats().EndOffset == before.EndOffset+int64(before.LiveKeys)
			}, waitLimit, time.Millisecond, "the copy appended")
			base := c.fs
			for i, pct := range []int{0, 30, 60, 100} {
				c.fs = base.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rand.New(rand.NewPCG(uint64(i), 7))})
				eng := openEngine(t, name, "/offsets", engine.Options{FS: c.fs})
				cfg := e.cfg
				cfg.Log = grouptest.NewLog(eng)
				co, err := group.Open(cfg)
				require.NoError(t, err)
				got := snapshot(t, co)
				st := co.LogStats()
				require.NoError(t, co.Close())
				require.NoError(t, eng.Close())
				assert.Equal(t, want, got, "%d%% of the unsynced copy survived", pct)
				assert.Equal(t, before.StartOffset, st.StartOffset)
				t.Logf("%d%% of the unsynced data kept: the log ends at %d (copy from %d to %d)",
					pct, st.EndOffset, before.EndOffset, before.EndOffset+int64(before.LiveKeys))
			}
			e.log.ReleaseDurable()
			require.NoError(t, <-done)
			assert.Equal(t, want, snapshot(t, e.c))
		})
	}
}

func appendCommit(req *kmsg.OffsetCommitRequest, topic string, p int32, off int64, md string) *kmsg.OffsetCommitRequest {
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, off, -1, &md
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestCompactionBoundsLog: a member commits 12 partitions round after
// round; compaction starts by itself on the commit that crosses the
// threshold, so after every round the log holds fewer than CompactRatio
// records per live key (or less than CompactMinBytes).
func TestCompactionBoundsLog(t *testing.T) {
	for _, tc := range []struct {
		name     string
		minBytes int64
	}{
		{"ratio", 1},
		{"min bytes", 32 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *group.Config) { c.CompactMinBytes = tc.minBytes })
			ids, gen := e.stable("g", 1)
			const rounds = 300
			most := int64(0)
			for r := range rounds {
				var offs []tpo
				for p := range int32(12) {
					offs = append(offs, tpo{"t", p, int64(r)})
				}
				commitAll(t, e, "g", ids[0], gen, offs...)
				group.WaitCompactionIdle(e.c)
				st := e.c.LogStats()
				records := st.EndOffset - st.StartOffset
				require.True(t, records < group.DefaultCompactRatio*int64(st.LiveKeys) || st.Bytes < tc.minBytes,
					"round %d: %d records for %d live keys, %d bytes", r, records, st.LiveKeys, st.Bytes)
				most = max(most, records)
			}
			st := e.c.LogStats()
			assert.Equal(t, 13, st.LiveKeys, "the group's metadata and 12 offsets")
			assert.Greater(t, st.Compactions, 3)
			assert.Equal(t, st.Compactions, e.log.Deletes())
			assert.Equal(t, st.StartOffset, e.log.Engine().StartOffset())
			t.Logf("%d compactions; the log held at most %d records (%d written)", st.Compactions, most, st.EndOffset)

			e.restart()
			got := e.fetch("g", 0, 5, 11)
			assert.Equal(t, []int64{rounds - 1, rounds - 1, rounds - 1}, got)
		})
	}
}

// TestCompactionConcurrentCommits: writers commit increasing offsets while
// compactions run back to back: no commit is lost or overtaken by an
// older one, in the running coordinator or after a restart.
func TestCompactionConcurrentCommits(t *testing.T) {
	e := newEnv(t, func(c *group.Config) { c.CompactMinBytes, c.CompactRatio = 1, 2 })
	const writers, commits = 4, 150
	ctx, cancel := context.WithCancel(context.Background())
	var compactor sync.WaitGroup
	compactor.Add(1)
	go func() {
		defer compactor.Done()
		for ctx.Err() == nil {
			e.c.Compact(ctx)
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := fmt.Sprintf("c%d", w)
			for i := range int64(commits) {
				codes := commitCodes(e.c.OffsetCommit(commitReq(g, "", -1, tpo{"t", 0, i}, tpo{"t", int32(w) + 1, i})))
				if !assert.Equal(t, []int16{0, 0}, codes, "%s commit %d", g, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	compactor.Wait()
	group.WaitCompactionIdle(e.c)
	st := e.c.LogStats()
	assert.Greater(t, st.Compactions, 0)
	check := func(when string) {
		for w := range int32(writers) {
			assert.Equal(t, []int64{commits - 1, commits - 1}, e.fetch(fmt.Sprintf("c%d", w), 0, w+1), "%s: writer %d", when, w)
		}
	}
	check("running")
	e.restart()
	check("after a restart")
}

// TestCompactionRacesWithWrites: between the moment a compaction takes
// the live keys and its copy, one key gets a newer value, a group is
// deleted and a new key appears. None of them is undone by the copy, in
// the running coordinator or after a restart.
func TestCompactionRacesWithWrites(t *testing.T) {
	e := newEnv(t, topicsTU)
	commitAll(t, e, "a", "", -1, tpo{"t", 0, 1}, tpo{"t", 1, 1}, tpo{"t", 2, 1})
	commitAll(t, e, "b", "", -1, tpo{"t", 0, 1})
	before := e.c.LogStats()
	group.SetCompactHook(e.c, func() {
		commitAll(t, e, "a", "", -1, tpo{"t", 0, 2})
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"b"}
		assert.Zero(t, e.c.DeleteGroups(context.Background(), del).Groups[0].ErrorCode)
		commitAll(t, e, "c", "", -1, tpo{"t", 5, 7})
	})
	require.NoError(t, e.c.Compact(context.Background()))
	group.SetCompactHook(e.c, nil)
	st := e.c.LogStats()
	assert.Equal(t, before.EndOffset, st.StartOffset, "the log starts where the keys were taken")
	assert.Equal(t, 3+1, st.LiveKeys, "a: 3 offsets, c: 1")

	check := func(when string) {
		t.Helper()
		assert.Equal(t, []int64{2, 1, 1}, e.fetch("a", 0, 1, 2), "%s: the newer value stays", when)
		assert.Equal(t, []int64{7}, e.fetch("c", 5), "%s: the key written during the compaction stays", when)
		assert.Equal(t, map[string]string{"a": "Empty", "c": "Empty"}, e.listGroups(), "%s: b stays deleted", when)
	}
	check("running")
	e.restart()
	check("after a restart")
}

// TestCloseStopsCompaction: Close does not wait for a compaction's copy to
// become durable; nothing is deleted, and the log replays to the same
// state.
func TestCloseStopsCompaction(t *testing.T) {
	e := newEnv(t, topicsTU)
	buildState(t, e, 5)
	want := snapshot(t, e.c)
	before := e.c.LogStats()
	group.WaitStores(e.c) // the last group's metadata, written as it emptied
	e.log.HoldDurable()
	done := make(chan error, 1)
	go func() { done <- e.c.Compact(context.Background()) }()
	require.Eventually(t, func() bool {
		return e.c.LogStats().EndOffset == before.EndOffset+int64(before.LiveKeys)
	}, waitLimit, time.Millisecond, "the copy appended")
	require.NoError(t, e.c.Close())
	require.ErrorIs(t, recv(t, done), context.Canceled)
	assert.Equal(t, before.StartOffset, e.log.Engine().StartOffset())
	e.log.ReleaseDurable()
	e.open()
	assert.Equal(t, want, snapshot(t, e.c))
}

// TestCompactionRetriesAfterFailure: a failed compaction is not retried on
// every commit, only once the log has grown by CompactMinBytes again.
func TestCompactionRetriesAfterFailure(t *testing.T) {
	const minBytes = 4 << 10
	e := newEnv(t, func(c *group.Config) { c.CompactMinBytes = minBytes })
	ids, gen := e.stable("g", 1)
	r := 0
	// round commits 12 partitions (one batch of less than 1 KiB) and says
	// whether a compaction was attempted: it appended a copy too.
	round := func() bool {
		t.Helper()
		appends := e.log.Appends()
		var offs []tpo
		for p := range int32(12) {
			offs = append(offs, tpo{"t", p, int64(r)})
		}
		commitAll(t, e, "g", ids[0], gen, offs...)
		group.WaitCompactionIdle(e.c)
		r++
		return e.log.Appends()-appends > 1
	}

	e.log.FailDeleteBefore(grouptest.ErrInjected)
	for !round() {
		require.Less(t, r, 100, "no compaction attempted")
	}
	failed := e.c.LogStats()
	assert.Zero(t, failed.Compactions)
	assert.False(t, round(), "no second attempt on the next commit")

	e.log.FailDeleteBefore(nil)
	for {
		pre := e.c.LogStats().Bytes
		if round() {
			assert.GreaterOrEqual(t, pre, failed.Bytes+minBytes-1<<10, "retried only once the log grew by CompactMinBytes")
			break
		}
		require.Less(t, r, 1000, "never retried")
	}
	assert.Equal(t, 1, e.c.LogStats().Compactions)
	assert.Equal(t, []int64{int64(r - 1)}, e.fetch("g", 0))
}
