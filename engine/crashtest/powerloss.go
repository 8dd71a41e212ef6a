package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

const (
	// dataDir is the operator's data directory: it exists, durably, before
	// the workload starts. logDir, inside it, is the engine's to create.
	dataDir = "/data"
	logDir  = "/data/log"
	// maxFailures stops a sweep that keeps failing: the first few crash
	// points say what is wrong, the rest repeat it.
	maxFailures = 5
)

// unsyncedShares are the shares of unsynced data a crashed disk may keep,
// from "exactly what was synced" to "everything written" (a process crash).
var unsyncedShares = []int{0, 30, 70, 100}

// mode is what the engine sees after the power goes out.
type mode struct {
	name      string
	failAfter bool
}

var modes = []mode{
	// ProcessStops: the workload stops at the crash and the engine's later
	// calls succeed on a disk that no longer matters: a machine that halts.
	// It checks recovery alone, even for an engine that cannot take errors.
	{name: "ProcessStops"},
	// CallsFail: every call after the crash fails, fsyncs included, and the
	// engine must return errors, not panic or hang.
	{name: "CallsFail", failAfter: true},
}

func testPowerLoss(t *testing.T, d engine.Driver, master uint64) {
	needDurable(t, d)
	if !d.Caps.CustomFS {
		t.Skipf("engine %s does not declare CustomFS: it cannot run on a crashable filesystem, so power loss is not simulated (Kill still runs)", d.Name)
	}
	seeds := []uint64{master}
	if *flagLong && *flagSeed == 0 {
		for i := range uint64(4) {
			seeds = append(seeds, master+1+i)
		}
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, s := range seeds {
				sweep(t, d, m, s)
			}
		})
	}
}

// sweep counts the write operations of the seed's workload, then crashes it
// at each of them in turn (or only at -crash.k).
func sweep(t *testing.T, d engine.Driver, m mode, seed uint64) {
	p := makePlan(rand.New(rand.NewPCG(seed, 0x706c616e)), workloadSize())
	n, err := countOps(d, p)
	if err != nil {
		t.Fatalf("seed %d: the workload fails before any crash: %v\nreplay: %s", seed, err, replay(t, replayFlags(seed, 0)))
	}
	t.Logf("seed %d: %d steps, %d write operations: crashing at each", seed, len(p.steps), n)
	crashEach(t, m, seed, n, func(k int) crashResult { return crashAt(d, p, m, seed, k) })
}

// crashEach runs crash at each of the n crash points of a workload in turn
// (or only at -crash.k) and reports what they find: every failure, up to
// maxFailures, and the crash points where the engine panicked.
func crashEach(t *testing.T, m mode, seed uint64, n int, crash func(k int) crashResult) {
	first, last := 1, n
	if *flagK > 0 {
		first, last = *flagK, *flagK
	}
	var (
		failures   int
		panics     []int
		firstPanic string
	)
	defer func() {
		if len(panics) > 0 {
			t.Errorf("seed %d: the engine panicked, after the power went out, at %d of %d crash points %v; the first:\n%s",
				seed, len(panics), n, panics, firstPanic)
		}
	}()
	for k := first; k <= last; k++ {
		if *flagV {
			fmt.Fprintf(os.Stderr, "crashtest: %s %s seed %d, crash point %d of %d\n", t.Name(), m.name, seed, k, n)
		}
		res := crash(k)
		if res.panicked != nil {
			if panics = append(panics, k); len(panics) == 1 {
				firstPanic = res.report(seed, k, n, replay(t, replayFlags(seed, k)))
			}
		}
		if len(res.problems) == 0 {
			continue
		}
		failures++
		t.Error(res.report(seed, k, n, replay(t, replayFlags(seed, k))))
		if res.hung || failures == maxFailures {
			t.Errorf("seed %d: stopped the sweep at crash point %d of %d after %d failures", seed, k, n, failures)
			return
		}
	}
}

func replayFlags(seed uint64, k int) string {
	f := fmt.Sprintf("-crash.seed=%d", seed)
	if k > 0 {
		f += fmt.Sprintf(" -crash.k=%d", k)
	}
	if *flagLong {
		f += " -crash.long"
	}
	return f
}

// newDisk is an empty crashable filesystem holding a durable dataDir.
func newDisk() (*vfs.MemFS, error) {
	mem := vfs.NewCrashableMem()
	if err := mem.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := engine.SyncDir(mem, "/"); err != nil {
		return nil, err
	}
	return mem, engine.SyncDir(mem, dataDir)
}

// countOps runs the workload with no crash, checks that a reopen sees the
// log the workload expects, and returns how many write operations it made.
func countOps(d engine.Driver, p plan) (int, error) {
	mem, err := newDisk()
	if err != nil {
		return 0, err
	}
	fs := newCrashFS(mem, 0, nil, 0, false)
	var o outcome
	if err := guard("the workload", func() { execute(context.Background(), d, fs, logDir, p, &o) }); err != nil {
		return 0, err
	}
	if !o.finished {
		return 0, fmt.Errorf("%s", o.stopped)
	}
	if rec := recoverAndCheck(d, mem, o.x); len(rec.bad) > 0 {
		return 0, fmt.Errorf("after a clean Close and reopen:\n  - %s", strings.Join(rec.bad, "\n  - "))
	}
	return fs.opCount(), nil
}

// crashRun runs workload (which returns why it stopped early, if it did)
// on a fresh disk that loses power at write operation k, and returns the
// crashed filesystem (its clone is the surviving disk), the crash point's
// random source and what it found so far; a nil filesystem says the story
// ends there (the disk could not be made, or the workload hung).
func crashRun(m mode, seed uint64, k int, workload func(fs *crashFS) string) (*crashFS, *rand.Rand, crashResult) {
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	res := crashResult{unsyncedPct: unsyncedShares[rng.IntN(len(unsyncedShares))]}
	mem, err := newDisk()
	if err != nil {
		res.problems = []string{err.Error()}
		return nil, rng, res
	}
	fs := newCrashFS(mem, k, rng, res.unsyncedPct, m.failAfter)
	var stopped string
	err = guard("the workload", func() { stopped = workload(fs) })
	switch {
	case errors.Is(err, errHang):
		res.problems = append(res.problems, err.Error())
		res.hung, res.crashOp = true, fs.crashedAt()
		return nil, rng, res // what the workload recorded is still the hung goroutine's
	case errors.As(err, &res.panicked):
		// Reported apart from durability: go on and check the disk it left.
	case err != nil:
		res.problems = append(res.problems, err.Error())
	}
	fs.crashNow()
	res.crashOp, res.recent, res.stopped = fs.crashOp, fs.recent, stopped
	return fs, rng, res
}

// crashResult is one crash point's story, for the failure message.
type crashResult struct {
	unsyncedPct int
	crashOp     string
	recent      []string
	stopped     string
	problems    []string
	hung        bool
	panicked    *panicError // the engine panicked after a crash
	second      secondCrash
}

// crashAt runs the workload on a fresh disk that loses power at write
// operation k, then recovers the surviving disk and checks it.
func crashAt(d engine.Driver, p plan, m mode, seed uint64, k int) crashResult {
	var o outcome
	fs, rng, res := crashRun(m, seed, k, func(fs *crashFS) string {
		execute(context.Background(), d, fs, logDir, p, &o)
		return o.stopped
	})
	if fs == nil {
		return res
	}
	pristine := copyDisk(fs.clone)
	counted := newCrashFS(fs.clone, 0, nil, 0, false)
	rec := recoverAndCheck(d, counted, o.x)
	res.problems = append(res.problems, rec.bad...)
	res.hung = rec.hung
	if len(res.problems) > 0 || res.panicked != nil {
		return res
	}
	if rng.IntN(2) == 0 { // half the crash points, to keep the sweep short
		res.second = crashRecovery(d, pristine, rec, counted.opCount(), rng, m.failAfter)
	}
	res.problems = append(res.problems, res.second.problems...)
	res.hung = res.second.hung
	if res.second.panicked != nil {
		res.panicked = res.second.panicked
	}
	return res
}

func (r crashResult) report(seed uint64, k, n int, replayCmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: power lost at write operation %d of %d (%s); the disk kept %d%% of unsynced data\n",
		seed, k, n, r.crashOp, r.unsyncedPct)
	if r.stopped != "" {
		fmt.Fprintf(&b, "  the workload stopped at %s\n", r.stopped)
	}
	if r.second.at > 0 {
		fmt.Fprintf(&b, "  then, recovering, power lost again at its write operation %d of %d (%s); the disk kept %d%% of unsynced data\n",
			r.second.at, r.second.of, r.second.crashOp, r.second.unsyncedPct)
	}
	if r.panicked != nil {
		fmt.Fprintf(&b, "  - %v\n", r.panicked)
	}
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	if len(r.recent) > 0 {
		fmt.Fprintf(&b, "  operations just before the crash: %s\n", strings.Join(r.recent, "; "))
	}
	fmt.Fprintf(&b, "  replay: %s", replayCmd)
	return b.String()
}
