package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// testStorePowerLoss is PowerLoss for a store of several logs (see the
// package documentation, Store/PowerLoss).
func testStorePowerLoss(t *testing.T, d engine.Driver, master uint64) {
	needDurable(t, d)
	if !d.Caps.CustomFS {
		t.Skipf("engine %s does not declare CustomFS: its store cannot run on a crashable filesystem (Store/Kill still runs)", d.Name)
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { sweepStore(t, d, m, master) })
	}
}

func storeWorkloadSize() int {
	if *flagLong {
		return 600
	}
	return 120
}

// sweepStore counts the store workload's write operations, then crashes it
// at each of them in turn (or only at -crash.k).
func sweepStore(t *testing.T, d engine.Driver, m mode, seed uint64) {
	p := makeStorePlan(rand.New(rand.NewPCG(seed, 0x73746f72)), storeWorkloadSize())
	n, err := countStoreOps(d, p)
	if err != nil {
		t.Fatalf("seed %d: the store workload fails before any crash: %v\nreplay: %s", seed, err, replay(t, replayFlags(seed, 0)))
	}
	t.Logf("seed %d: %d steps over %d logs, %d write operations: crashing at each", seed, len(p.steps), storeLogs, n)
	crashEach(t, m, seed, n, func(k int) crashResult { return crashStoreAt(d, p, m, seed, k) })
}

// countStoreOps runs the store workload with no crash, checks what a reopen
// sees, and returns how many write operations it made.
func countStoreOps(d engine.Driver, p storePlan) (int, error) {
	mem, err := newDisk()
	if err != nil {
		return 0, err
	}
	fs := newCrashFS(mem, 0, nil, 0, false)
	var o storeOutcome
	if err := guard("the store workload", func() { executeStore(context.Background(), d, fs, p, &o) }); err != nil {
		return 0, err
	}
	if !o.finished {
		return 0, fmt.Errorf("%s", o.stopped)
	}
	if bad, hung := recoverStore(d, mem, &o); len(bad) > 0 || hung {
		return 0, fmt.Errorf("after a clean Close and reopen:\n  - %s", strings.Join(bad, "\n  - "))
	}
	return fs.opCount(), nil
}

// crashStoreAt runs the store workload on a fresh disk that loses power at
// write operation k, then recovers the surviving disk and checks it.
func crashStoreAt(d engine.Driver, p storePlan, m mode, seed uint64, k int) crashResult {
	var o storeOutcome
	fs, _, res := crashRun(m, seed, k, func(fs *crashFS) string {
		executeStore(context.Background(), d, fs, p, &o)
		return o.stopped
	})
	if fs == nil {
		return res
	}
	bad, hung := recoverStore(d, fs.clone, &o)
	res.problems = append(res.problems, bad...)
	res.hung = hung
	return res
}

// recoverStore opens the store on the surviving disk and checks it against
// o: every log whose Create returned is there unless its Delete returned,
// none whose Delete returned is, each holds what its log may hold (as the
// single-log checks say), takes one more batch, and a new log gets an id no
// log of the workload had.
func recoverStore(d engine.Driver, disk vfs.FS, o *storeOutcome) (bad []string, hung bool) {
	err := guard("recovery", func() { bad = checkStore(d, disk, o) })
	if errors.Is(err, errHang) {
		return []string{err.Error()}, true
	}
	if err != nil {
		bad = append(bad, err.Error())
	}
	return bad, false
}

func checkStore(d engine.Driver, disk vfs.FS, o *storeOutcome) []string {
	s, err := d.OpenStoreIn(logDir, engineOptions(disk))
	if err != nil {
		return []string{fmt.Sprintf("OpenStore after the crash failed: %v", err)}
	}
	defer s.Close()
	ids, err := s.Logs()
	if err != nil {
		return []string{fmt.Sprintf("Logs after the crash failed: %v", err)}
	}
	var bad []string
	known := map[engine.LogID]int{}
	creating := 0
	for n := range o.logs {
		switch l := &o.logs[n]; l.fate {
		case fateLive, fateDeleting, fateDeleted:
			known[l.id] = n
			if l.fate == fateLive && !slices.Contains(ids, l.id) {
				bad = append(bad, fmt.Sprintf("log %d (id %s) is missing: its Create returned nil, no Delete began", n, l.id))
			}
		case fateCreating:
			creating++
		}
	}
	for _, id := range ids {
		n, ok := known[id]
		switch {
		case !ok && creating == 0:
			bad = append(bad, fmt.Sprintf("the store lists log %s, which no Create made", id))
			continue
		case !ok:
			creating-- // the Create in flight made it: it holds nothing
			n = -1
		case o.logs[n].fate == fateDeleted:
			bad = append(bad, fmt.Sprintf("log %d (id %s) came back: its Delete returned nil", n, id))
			continue
		}
		bad = append(bad, checkStoreLog(s, id, n, o)...)
	}
	id, e, err := s.Create(engine.LogOptions{})
	if err != nil {
		return append(bad, fmt.Sprintf("Create after the crash failed: %v", err))
	}
	if _, dup := known[id]; dup || slices.Contains(ids, id) {
		bad = append(bad, "Create after the crash handed out an id a log of the workload had")
	}
	if err := e.Close(); err != nil {
		bad = append(bad, fmt.Sprintf("Close of a log created after the crash failed: %v", err))
	}
	return bad
}

// checkStoreLog opens log id of the recovered store (the workload's log n,
// or -1 for one a Create in flight made) and checks it.
func checkStoreLog(s engine.Store, id engine.LogID, n int, o *storeOutcome) []string {
	x := expect{strict: true}
	if n >= 0 {
		x = o.logs[n].x
	}
	_, _, bad := checkLogOf(s, id, x, fmt.Sprintf("log %d (id %s)", n, id))
	return bad
}

// checkLogOf opens log id of s, checks it against x, appends one batch
// (synced) and closes it: what it read, the batch, and what was wrong,
// each finding led by what.
func checkLogOf(s engine.Store, id engine.LogID, x expect, what string) (recovered, engine.Batch, []string) {
	r, nb, bad := checkLog(s, id, x)
	for i := range bad {
		bad[i] = what + ": " + bad[i]
	}
	return r, nb, bad
}

func checkLog(s engine.Store, id engine.LogID, x expect) (recovered, engine.Batch, []string) {
	e, err := s.Open(id, engine.LogOptions{})
	if err != nil {
		return recovered{}, engine.Batch{}, []string{fmt.Sprintf("Open after the crash failed: %v", err)}
	}
	r, bad := readLog(e)
	bad = append(bad, compare(r, x)...)
	nb, more := resume(context.Background(), e, 2, 100)
	bad = append(bad, more...)
	if err := e.Close(); err != nil {
		bad = append(bad, fmt.Sprintf("Close after recovery failed: %v", err))
	}
	return r, nb, bad
}
