package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// recovery is what one recovery of a crashed disk saw and did.
type recovery struct {
	r       recovered    // the log the fresh engine opened
	resumed engine.Batch // the batch it appended at the recovered end
	synced  bool         // and whose Sync returned nil
	bad     []string     // contract violations (only when checked)
	hung    bool
}

// recoverAndCheck opens a fresh engine on the surviving disk, checks its log
// against x, appends one more batch, syncs it and closes the engine.
func recoverAndCheck(d engine.Driver, disk vfs.FS, x expect) recovery {
	rec, err := runRecovery(d, disk, &x, func() bool { return false })
	switch {
	case errors.Is(err, errHang):
		return recovery{bad: []string{err.Error()}, hung: true}
	case err != nil:
		rec.bad = append(rec.bad, err.Error())
	}
	return rec
}

// runRecovery opens, reads, checks against x if x is not nil, resumes and
// closes. The resumed batch counts as synced only if its Sync returned nil
// before the power went out (lost). A hang leaves the returned recovery
// empty: the hung goroutine still owns its own.
func runRecovery(d engine.Driver, disk vfs.FS, x *expect, lost func() bool) (recovery, error) {
	var rec recovery
	err := guard("recovery", func() {
		e, err := d.Open(logDir, engineOptions(disk))
		if err != nil {
			rec.bad = append(rec.bad, fmt.Sprintf("Open after the crash failed: %v", err))
			return
		}
		r, bad := readLog(e)
		rec.r = r
		rec.bad = append(rec.bad, bad...)
		if x != nil {
			rec.bad = append(rec.bad, compare(r, *x)...)
		}
		rec.resumed, bad = resume(context.Background(), e, 2, 100)
		rec.synced = len(bad) == 0 && !lost()
		rec.bad = append(rec.bad, bad...)
		if err := e.Close(); err != nil {
			rec.bad = append(rec.bad, fmt.Sprintf("Close after recovery failed: %v", err))
		}
	})
	if errors.Is(err, errHang) {
		return recovery{}, err
	}
	return rec, err
}

// secondCrash is the story of a power loss during recovery.
type secondCrash struct {
	at, of      int // the write operation of the recovery it hit, of how many
	crashOp     string
	unsyncedPct int
	problems    []string
	hung        bool
	panicked    *panicError
}

// crashRecovery loses power again, at a random write operation of the
// recovery of disk (which first made of of them), then recovers what is
// left and checks it. Everything first found on disk was durable before the
// recovery began, so it must all still be there, and nothing it dropped may
// come back: a recovery must be safe to crash.
func crashRecovery(d engine.Driver, disk *vfs.MemFS, first recovery, of int, rng *rand.Rand, failAfter bool) secondCrash {
	if of == 0 {
		return secondCrash{}
	}
	sc := secondCrash{at: 1 + rng.IntN(of), of: of, unsyncedPct: unsyncedShares[rng.IntN(len(unsyncedShares))]}
	fs := newCrashFS(disk, sc.at, rng, sc.unsyncedPct, failAfter)
	rec, err := runRecovery(d, fs, nil, fs.lost)
	switch {
	case errors.Is(err, errHang):
		sc.problems, sc.hung, sc.crashOp = []string{err.Error()}, true, fs.crashedAt()
		return sc
	case errors.As(err, &sc.panicked):
	case err != nil:
		sc.problems = append(sc.problems, err.Error())
	}
	fs.crashNow()
	sc.crashOp = fs.crashOp

	x := expect{
		batches: append(slices.Clone(first.r.batches), first.resumed),
		startLo: first.r.start,
		startHi: first.r.start,
		acked:   first.r.end,
		strict:  true,
	}
	if rec.synced {
		x.acked = rec.resumed.NextOffset()
	}
	final := recoverAndCheck(d, fs.clone, x)
	sc.problems = append(sc.problems, final.bad...)
	sc.hung = sc.hung || final.hung
	return sc
}

// copyDisk is an exact copy of a crashed disk (all of which is durable).
func copyDisk(m *vfs.MemFS) *vfs.MemFS {
	return m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(0, 0))})
}
