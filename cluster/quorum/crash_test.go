package quorum

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine"
)

var (
	flagCrashLong = flag.Bool("quorum.crash.long", false, "quorum: crash tests with a bigger workload and more seeds")
	flagCrashSeed = flag.Uint64("quorum.crash.seed", 0, "quorum: run the crash tests with this seed only")
	flagCrashK    = flag.Int("quorum.crash.k", 0, "quorum: crash only at this write operation (0: every one)")
)

// A crash test runs a metadata workload on a crashable in-memory disk,
// counts its write operations, then runs it again once per write k, losing
// power at the k-th, and recovers the disk that survived: every node at
// once (a coordinated power loss, the hardest case for a quorum).
//
// After recovery, whatever the workload saw committed (a proposal applied on
// its leader) is still there at the same index; whatever each node had
// applied is a prefix of what it applies after recovery (nothing committed
// was lost or changed); the state restored from each snapshot is such a
// prefix too (never half-applied); and the cluster elects a leader that
// commits a new proposal everywhere.

func TestCrashOneNode(t *testing.T)    { crashSuite(t, 1) }
func TestCrashThreeNodes(t *testing.T) { crashSuite(t, 3) }

// crashWorkload is the workload's size: proposals, snapshot interval.
func crashWorkload() (proposals int, snapshotEvery uint64) {
	if *flagCrashLong {
		return 24, 4
	}
	return 6, 3
}

func crashSuite(t *testing.T, nodes int) {
	d, err := engine.Lookup("segment")
	require.NoError(t, err)
	require.True(t, d.Caps.CustomFS && d.Caps.Durable)
	seeds := []uint64{uint64(nodes)}
	if *flagCrashLong {
		seeds = append(seeds, 100, 101, 102)
	}
	if *flagCrashSeed != 0 {
		seeds = []uint64{*flagCrashSeed}
	}
	for _, seed := range seeds {
		n := runCrash(t, nodes, seed, 0).ops
		t.Logf("seed %d: %d nodes, %d write operations: crashing at each", seed, nodes, n)
		first, last := 1, n
		if *flagCrashK > 0 {
			first, last = *flagCrashK, *flagCrashK
		}
		failures := 0
		for k := first; k <= last && failures < 3; k++ {
			if r := runCrash(t, nodes, seed, k); len(r.problems) > 0 {
				failures++
				t.Errorf("seed %d: power lost at write %d of %d (%s), the disk kept %d%% of unsynced data; the workload stopped at: %v\n  - %s\n  replay: go test ./cluster/quorum -run %s -quorum.crash.seed=%d -quorum.crash.k=%d",
					seed, k, n, r.crashOp, r.unsyncedPct, r.stopped, strings.Join(r.problems, "\n  - "), t.Name(), seed, k)
			}
		}
	}
}

type crashRun struct {
	ops         int
	crashOp     string
	unsyncedPct int
	stopped     error
	problems    []string
}

func crashTweak(cfg *NodeConfig) {
	_, every := crashWorkload()
	cfg.SnapshotEntries, cfg.CatchUpEntries = every, 1
}

// runCrash runs the workload losing power at write k (0: at its end) and
// checks the recovered cluster.
func runCrash(t *testing.T, nodes int, seed uint64, k int) crashRun {
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	r := crashRun{unsyncedPct: []int{0, 30, 70, 100}[rng.IntN(4)]}
	mem := vfs.NewCrashableMem()
	require.NoError(t, mem.MkdirAll("/", 0o755))
	fs := newCrashFS(mem, k, rng, r.unsyncedPct)

	c := makeCluster(t, fs, "segment", seed, nodes, crashTweak, true)
	acked, pre := workload(c)
	r.ops, r.stopped = fs.opCount(), c.failed
	if k == 0 {
		require.NoError(t, c.failed, "the workload fails with no crash")
		if nodes > 1 {
			require.Positive(t, c.snaps, "the workload sends no snapshot")
		}
	}
	disk := fs.crashNow()
	r.crashOp = fs.crashOp
	c.closeAll()

	// What the nodes applied are prefixes of one history: the longest.
	var truth []rec
	for _, id := range c.ids {
		if len(pre[id]) > len(truth) {
			truth = pre[id]
		}
	}
	for _, id := range c.ids {
		if !isPrefix(pre[id], truth) {
			r.problems = append(r.problems, fmt.Sprintf("before the crash, node %d applied %v, another %v", id, pre[id], truth))
		}
	}

	// Recover every node from the surviving disk. A snapshot from the
	// leader is durable before it is applied: a node may restore state it
	// had not applied itself, but never state no node had applied.
	rc := makeCluster(t, disk, "segment", seed+1, nodes, crashTweak, true)
	for _, id := range rc.ids {
		if rc.start(id); rc.failed != nil {
			break
		}
		if restored := rc.sms[id].recs; !isPrefix(restored, truth) {
			r.problems = append(r.problems, fmt.Sprintf("node %d: the snapshot restored %v, not a prefix of what was applied %v", id, restored, truth))
		}
	}
	l, _ := rc.waitLeader(200)
	rc.propose(l, "after")
	rc.settle()
	rc.tick(3)
	if rc.failed != nil {
		r.problems = append(r.problems, "recovery: "+rc.failed.Error())
		return r
	}
	final := rc.sms[l].recs
	for _, id := range rc.ids {
		if got := rc.sms[id].recs; !equalRecs(got, final) {
			r.problems = append(r.problems, fmt.Sprintf("node %d applied %v, the leader %d %v", id, got, l, final))
		}
		if !isPrefix(pre[id], final) {
			r.problems = append(r.problems, fmt.Sprintf("node %d had applied %v before the crash, the cluster now holds %v", id, pre[id], final))
		}
	}
	for _, p := range slices.Sorted(mapKeys(acked)) {
		if !slices.Contains(final, rec{acked[p], p}) {
			r.problems = append(r.problems, fmt.Sprintf("%q was committed at %d before the crash; the cluster now holds %v", p, acked[p], final))
		}
	}
	if len(final) == 0 || final[len(final)-1].Payload != "after" {
		r.problems = append(r.problems, fmt.Sprintf("the recovered cluster did not apply a new proposal: %v", final))
	}
	return r
}

// workload elects a leader and proposes one entry at a time. On a cluster
// of several nodes, a follower misses the first half (cut off) and catches
// up by snapshot, then the leadership is handed to it.
func workload(c *cluster) (map[string]uint64, map[uint64][]rec) {
	n, _ := crashWorkload()
	c.startAll()
	proposed := map[uint64]map[ProposalID]string{}
	l, _ := c.waitLeader(200)
	lag := c.ids[0]
	if lag == l {
		lag = c.ids[len(c.ids)-1]
	}
	if len(c.ids) > 1 {
		c.isolate(lag)
	}
	for i := 0; i < n && c.failed == nil; i++ {
		if i == n/2 && len(c.ids) > 1 {
			c.heal()
			c.tick(3)
			c.nodes[l].TransferLeadership(lag)
			c.settle()
			if l, _ = c.waitLeader(50); c.failed != nil {
				break
			}
		}
		p := fmt.Sprintf("p%d", i)
		pid := c.propose(l, p)
		if proposed[l] == nil {
			proposed[l] = map[ProposalID]string{}
		}
		proposed[l][pid] = p
		c.settle()
	}
	c.tick(2)
	acked := map[string]uint64{}
	pre := map[uint64][]rec{}
	for _, id := range c.ids {
		for pid, index := range c.applied[id] {
			acked[proposed[id][pid]] = index
		}
		if c.sms[id] != nil {
			pre[id] = slices.Clone(c.sms[id].recs)
		}
	}
	return acked, pre
}

func isPrefix(a, b []rec) bool { return len(a) <= len(b) && equalRecs(a, b[:len(a)]) }

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
