package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// Store/Kill: Kill for a store of several logs. The child opens the store,
// keeps storeKillLogs logs (creating those missing), appends to each from
// goroutines of its own and, on one more, makes a short-lived log over and
// over: created, a few batches acknowledged, closed, deleted. The parent
// kills it (SIGKILL) and checks every log: what each acknowledged is
// there, a log whose Create returned is listed, one whose Delete returned
// is not; then it deletes every log but the kept ones and starts the
// child again.

const (
	storeKillLogs   = 3
	storeKillEnv    = "MINIKAFKA_CRASHTEST_STORE" // set: the Kill child is Store/Kill's
	churnBatches    = 4
	lineKeep        = "keep"    // keep <id>: a kept log, open
	lineChurn       = "churn"   // churn <id>: a short-lived log, created
	lineDrop        = "drop"    // drop <id>: its Delete is about to be called
	lineDropped     = "dropped" // dropped <id>: its Delete returned nil
	storeKillWriter = 2         // appenders per kept log
)

func testStoreKill(t *testing.T, d engine.Driver, master uint64) {
	needDurable(t, d)
	if msg := storeKillRounds(t, d, master, *flagKills); msg != "" {
		t.Error(msg)
	}
}

func storeKillRounds(t *testing.T, d engine.Driver, master uint64, kills int) string {
	if name := os.Getenv(envChild); name != "" {
		if name != d.Name || os.Getenv(storeKillEnv) == "" {
			t.Skipf("a Kill child for another test")
		}
		runStoreChild(d) // never returns
	}
	dir := filepath.Join(t.TempDir(), "store")
	rng := rand.New(rand.NewPCG(master, 0x73746b6c))
	logs := map[engine.LogID]*killState{}
	for round := range kills {
		acks := 1 + rng.IntN(60)
		delay := time.Duration(rng.IntN(20_000)) * time.Microsecond
		if rng.IntN(5) == 0 {
			acks, delay = 0, time.Duration(rng.IntN(5_000))*time.Microsecond
		}
		run, err := runStoreChildOnce(t, d, dir, rng.Uint64(), acks, delay)
		if err == nil {
			err = run.problem()
		}
		var bad []string
		if err != nil {
			bad = []string{err.Error()}
		} else {
			bad = reopenStore(d, dir, run, logs)
		}
		if len(bad) > 0 {
			return fmt.Sprintf("seed %d: store kill round %d of %d (SIGKILL %v after acknowledgement %d, 0 meaning the start of Open):\n  - %s\n  replay: %s",
				master, round+1, kills, delay, acks, strings.Join(bad, "\n  - "),
				replay(t, fmt.Sprintf("-crash.seed=%d -crash.kills=%d", master, round+1)))
		}
	}
	t.Logf("seed %d: %d kills of a store of %d kept logs and short-lived ones survived", master, kills, storeKillLogs)
	return ""
}

// storeRun is what the parent heard from one store child.
type storeRun struct {
	childRun
	keep, churn     []engine.LogID
	drop, dropped   []engine.LogID
	acks            map[engine.LogID][]engine.Batch
	dels, deletions map[engine.LogID][]int64
}

// add takes one line of the store child's protocol.
func (r *storeRun) add(line string) {
	f := strings.Fields(line)
	if len(f) == 1 && f[0] == lineOpening {
		r.opening = true
		return
	}
	if len(f) < 2 {
		r.other = append(r.other, line)
		return
	}
	id, err := engine.ParseLogID(f[1])
	nums := make([]int64, 0, 3)
	for _, s := range f[2:] {
		n, perr := strconv.ParseInt(s, 10, 64)
		err = errors.Join(err, perr)
		nums = append(nums, n)
	}
	switch {
	case err != nil:
		r.other = append(r.other, line)
	case f[0] == lineKeep && len(nums) == 0:
		r.keep = append(r.keep, id)
	case f[0] == lineChurn && len(nums) == 0:
		r.churn = append(r.churn, id)
	case f[0] == lineDrop && len(nums) == 0:
		r.drop = append(r.drop, id)
	case f[0] == lineDropped && len(nums) == 0:
		r.dropped = append(r.dropped, id)
	case f[0] == lineAck && len(nums) == 3:
		r.acks[id] = append(r.acks[id], enginetest.Batch(nums[0], int32(nums[1]), int(nums[2])))
		r.heard++
	case f[0] == lineDel && len(nums) == 1:
		r.dels[id] = append(r.dels[id], nums[0])
	case f[0] == lineDeleted && len(nums) == 1:
		r.deletions[id] = append(r.deletions[id], nums[0])
	default:
		r.other = append(r.other, line)
	}
}

func runStoreChildOnce(t *testing.T, d engine.Driver, dir string, seed uint64, wantAcks int, delay time.Duration) (*storeRun, error) {
	run := &storeRun{acks: map[engine.LogID][]engine.Batch{}, dels: map[engine.LogID][]int64{}, deletions: map[engine.LogID][]int64{}}
	err := runChildProcess(t, d, []string{envDir + "=" + dir, envSeed + "=" + strconv.FormatUint(seed, 10), storeKillEnv + "=1"},
		run.add, &run.childRun, wantAcks, delay)
	return run, err
}

// reopenStore checks the store a killed child left against what it said,
// then deletes every log but the kept ones. logs is the parent's knowledge
// of each log kept so far, updated.
func reopenStore(d engine.Driver, dir string, run *storeRun, logs map[engine.LogID]*killState) []string {
	var bad []string
	err := guard("store recovery", func() { bad = checkKilledStore(d, dir, run, logs) })
	if errors.Is(err, errHang) {
		return []string{err.Error()}
	}
	if err != nil {
		bad = append(bad, err.Error())
	}
	return bad
}

func checkKilledStore(d engine.Driver, dir string, run *storeRun, logs map[engine.LogID]*killState) []string {
	s, err := d.OpenStoreIn(dir, killOptions(engine.SyncAlways))
	if err != nil {
		return []string{fmt.Sprintf("OpenStore after the kill failed: %v", err)}
	}
	defer s.Close()
	ids, err := s.Logs()
	if err != nil {
		return []string{fmt.Sprintf("Logs after the kill failed: %v", err)}
	}
	var bad []string
	for _, id := range append(slices.Clone(run.keep), run.churn...) {
		if logs[id] == nil {
			logs[id] = &killState{}
		}
		if !slices.Contains(ids, id) && !slices.Contains(run.drop, id) {
			bad = append(bad, fmt.Sprintf("log %s is missing: its Create returned nil, no Delete began", id))
		}
	}
	kept := 0
	for _, id := range ids {
		st := logs[id]
		switch {
		case slices.Contains(run.dropped, id):
			bad = append(bad, fmt.Sprintf("log %s came back: its Delete returned nil", id))
			continue
		case st == nil:
			st = &killState{} // a Create in flight at the kill made it
			logs[id] = st
		}
		bad = append(bad, checkKilledLog(s, id, run, st)...)
		if slices.Contains(run.keep, id) && kept < storeKillLogs {
			kept++
			continue
		}
		if err := s.Delete(id); err != nil {
			bad = append(bad, fmt.Sprintf("Delete of log %s after the kill failed: %v", id, err))
		}
		delete(logs, id)
	}
	return bad
}

// checkKilledLog checks one log of the recovered store against st and the
// run, appends a batch and updates st to what the log now holds.
func checkKilledLog(s engine.Store, id engine.LogID, run *storeRun, st *killState) []string {
	one := &childRun{acks: run.acks[id], dels: run.dels[id], deleted: run.deletions[id]}
	r, nb, bad := checkLogOf(s, id, st.expectAfter(one), "log "+id.String())
	*st = killState{known: append(r.batches, nb), start: r.start, acked: nb.NextOffset()}
	return bad
}

// runStoreChild is Store/Kill's child: it never returns.
func runStoreChild(d engine.Driver) {
	die := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crashtest store child (%s): "+format+"\n", append([]any{d.Name}, args...)...)
		os.Exit(2)
	}
	seed := childSeed(die)
	out := &child{die: die, out: new(sync.Mutex)}
	out.say("%s", lineOpening)
	s, err := d.OpenStoreIn(os.Getenv(envDir), killOptions(engine.SyncAlways))
	if err != nil {
		die("open store: %v", err)
	}
	ids, err := s.Logs()
	if err != nil {
		die("list logs: %v", err)
	}
	ids = ids[:min(len(ids), storeKillLogs)]
	var logs []engine.LogEngine
	for _, id := range ids {
		e, err := s.Open(id, engine.LogOptions{})
		if err != nil {
			die("open log %s: %v", id, err)
		}
		logs = append(logs, e)
	}
	for len(logs) < storeKillLogs {
		id, e, err := s.Create(engine.LogOptions{})
		if err != nil {
			die("create: %v", err)
		}
		ids, logs = append(ids, id), append(logs, e)
	}
	for i, e := range logs {
		out.say("%s %s", lineKeep, ids[i])
		c := &child{e: e, tag: " " + ids[i].String(), die: die, assign: new(sync.Mutex), out: out.out}
		for w := range storeKillWriter {
			go c.appender(rand.New(rand.NewPCG(seed, uint64(i*storeKillWriter+w))), w == 0)
		}
	}
	go churn(s, out, rand.New(rand.NewPCG(seed, 99)))
	select {}
}

// churn makes short-lived logs, one after the other: created, a few
// batches acknowledged, closed and deleted.
func churn(s engine.Store, out *child, rng *rand.Rand) {
	ctx := context.Background()
	for {
		id, e, err := s.Create(engine.LogOptions{})
		if err != nil {
			out.die("create: %v", err)
		}
		out.say("%s %s", lineChurn, id)
		for range churnBatches {
			b := enginetest.Batch(e.EndOffset(), int32(1+rng.IntN(5)), 12+rng.IntN(3000))
			if err := e.Append(b); err != nil {
				out.die("log %s: Append %s: %v", id, describe(b), err)
			}
			if err := e.Sync(ctx, b.NextOffset()); err != nil {
				out.die("log %s: Sync: %v", id, err)
			}
			out.say("%s %s %d %d %d", lineAck, id, b.BaseOffset, b.Records, len(b.Data))
		}
		if err := e.Close(); err != nil {
			out.die("log %s: Close: %v", id, err)
		}
		out.say("%s %s", lineDrop, id)
		if err := s.Delete(id); err != nil {
			out.die("delete log %s: %v", id, err)
		}
		out.say("%s %s", lineDropped, id)
	}
}
