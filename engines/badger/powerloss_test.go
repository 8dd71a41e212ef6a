package badger_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikafka/minikafka/engine/crashtest"
	"github.com/minikafka/minikafka/engine/powerfs"
	"github.com/minikafka/minikafka/engines/badger"
)

// Badger does its own file I/O (and mmaps its files), so crashtest's
// PowerLoss, which runs engines on an in-memory filesystem, cannot reach it.
// TestPowerLossFUSE runs the same workload on a powerfs mount instead: the
// test serves the mount, a child process (this test binary again) runs
// badger on it, and the power goes out at the k-th operation that changes
// the disk. The child is then killed, the log is reopened from the backing
// directory (the disk after the reboot) and judged by crashtest.Check.
// The child runs apart because a process that serves a FUSE mount must not
// mmap files on it (see powerfs).
var (
	flagPLSeed   = flag.Uint64("powerloss.seed", 0, "TestPowerLossFUSE: rerun this seed (0: draw one from the clock)")
	flagPLK      = flag.Int("powerloss.k", 0, "TestPowerLossFUSE: crash only at this operation of the FUSE layer")
	flagPLPoints = flag.Int("powerloss.points", 20, "TestPowerLossFUSE: how many crash points, spread over the workload's operations")
	flagPLLong   = flag.Bool("powerloss.long", false, "TestPowerLossFUSE: 200 crash points and three seeds")
	flagPLLie    = flag.Bool("powerloss.lyingdisk", false, "TestPowerLossFUSE: run on a disk that ignores fsync (the test must then fail)")
	flagPLPOSIX  = flag.Bool("powerloss.posix", false, "run TestPowerLossFUSEPOSIXNames, which fails on badger v4.9.6")
)

// Environment the parent sets for its child.
const (
	envPLDir  = "MINIKAFKA_POWERLOSS_DIR"  // the log directory, on the mount
	envPLSeed = "MINIKAFKA_POWERLOSS_SEED" // the workload's seed
)

// The child's protocol, one line on stdout per call that returned:
//
//	open ok | open err <error>
//	step <i> ok | step <i> err <error>
//	close ok | close err <error>
//
// It stops at the first error. A call whose line is missing was in flight.
const (
	lineOK  = "ok"
	lineErr = "err"
)

// keepShares are the shares of unsynced writes a power loss keeps, as in
// crashtest: from exactly what was synced to everything written.
var keepShares = []int{0, 30, 70, 100}

// childHang is how long a child may run before the parent gives up on it.
const childHang = 2 * time.Minute

// TestPowerLossFUSE runs the sweep on a journaling filesystem's model of
// names (powerfs.Options.JournaledNames: any fsync makes every earlier
// create and rename durable, as on ext4 and XFS).
func TestPowerLossFUSE(t *testing.T) {
	if dir := os.Getenv(envPLDir); dir != "" {
		runPowerLossChild(dir)
		return
	}
	runSweeps(t, true)
}

// TestPowerLossFUSEPOSIXNames runs the sweep with names durable only at
// their directory's fsync, as POSIX promises. Badger v4.9.6 loses data
// there: a memtable flush (at Close in this workload, whenever a memtable
// fills in production) creates the table file, fsyncs it and records it in
// the manifest, which it fsyncs, but fsyncs the directory only later (at
// the end of Close, or when a later compaction does). A power loss
// in between leaves a manifest listing a table whose name is gone, and
// Open fails: "file does not exist for table 1", every batch of that
// memtable out of reach (its WAL was deleted after the flush). Reproduced
// with -powerloss.seed=1796318582157131381 -powerloss.k=232 (the operation
// numbers drift a little from run to run: try k near the end of the
// workload). The engine cannot fix this from outside short of fsyncing the
// directory before every commit.
func TestPowerLossFUSEPOSIXNames(t *testing.T) {
	if !*flagPLPOSIX {
		t.Skip("badger v4.9.6 records a flushed table in its fsynced manifest before fsyncing the directory that names it, so a power loss during a memtable flush loses the table under POSIX's rules for names (see the test's doc); -powerloss.posix runs it")
	}
	runSweeps(t, false)
}

func runSweeps(t *testing.T, journaled bool) {
	if testing.Short() {
		t.Skip("-short: the FUSE power-loss sweep starts a process per crash point")
	}
	seeds := []uint64{plSeed()}
	if *flagPLLong && *flagPLSeed == 0 {
		seeds = append(seeds, seeds[0]+1, seeds[0]+2)
	}
	for _, seed := range seeds {
		t.Logf("seed %d (replay: go test ./engines/badger -run '^%s$' -powerloss.seed=%d)", seed, t.Name(), seed)
		sweepFUSE(t, seed, journaled)
	}
}

var plDrawn = uint64(time.Now().UnixNano())

func plSeed() uint64 {
	if *flagPLSeed != 0 {
		return *flagPLSeed
	}
	return plDrawn
}

// sweepFUSE counts the workload's operations on a mount that never loses
// power, then crashes it at the chosen points.
func sweepFUSE(t *testing.T, seed uint64, journaled bool) {
	w := crashtest.NewWorkload(seed)
	clean := runFUSE(t, seed, w, journaled, 0, 100)
	if clean.skip != nil {
		t.Skip(clean.skip)
	}
	require.Empty(t, clean.problems, "seed %d: with no power loss:\n%s", seed, clean.report())
	require.True(t, clean.closed, "seed %d: the workload did not finish without a power loss:\n%s", seed, clean.report())
	n := clean.ops
	t.Logf("seed %d: %d steps, %d operations of the FUSE layer", seed, w.Steps(), n)

	rng := rand.New(rand.NewPCG(seed, 0x6b))
	failures, cut := 0, 0
	ks := crashPoints(n, rng)
	defer func() {
		t.Logf("seed %d: %d crash points, %d of them before Close returned", seed, len(ks), cut)
	}()
	for _, k := range ks {
		keep := keepShares[rng.IntN(len(keepShares))]
		res := runFUSE(t, seed, w, journaled, k, keep)
		if !res.closed {
			cut++
		}
		if len(res.problems) == 0 {
			continue
		}
		failures++
		t.Errorf("seed %d: power lost at FUSE operation %d of %d, keeping %d%% of unsynced writes:\n%s\nreplay: go test ./engines/badger -run '^%s$' -powerloss.seed=%d -powerloss.k=%d",
			seed, k, n, keep, res.report(), t.Name(), seed, k)
		if failures == 3 {
			t.Errorf("seed %d: stopped after %d failures", seed, failures)
			return
		}
	}
}

// crashPoints are the operations to crash at: -powerloss.k alone, or
// points spread evenly over 1..n, each moved by a random amount within its
// share so that sweeps with other seeds hit other operations.
func crashPoints(n int, rng *rand.Rand) []int {
	if *flagPLK > 0 {
		return []int{*flagPLK}
	}
	points := *flagPLPoints
	if *flagPLLong {
		points = 200
	}
	points = min(points, n)
	ks := make([]int, 0, points)
	for i := range points {
		lo, hi := 1+i*n/points, (i+1)*n/points
		ks = append(ks, lo+rng.IntN(max(hi-lo+1, 1)))
	}
	return ks
}

// fuseRun is what one run of the workload on a mount left.
type fuseRun struct {
	skip     error
	ops      int
	lines    []string
	stderr   string
	closed   bool
	problems []string
}

func (r fuseRun) report() string {
	var b strings.Builder
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	last := r.lines[max(len(r.lines)-3, 0):]
	fmt.Fprintf(&b, "  the child's last lines: %q", last)
	if r.stderr != "" {
		fmt.Fprintf(&b, "\n  its stderr (tail): %s", tail(r.stderr, 2000))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// runFUSE runs the workload in a child on a fresh mount that loses power at
// operation k (0: never), keeping keep percent of unsynced writes, with
// names durable at any fsync (journaled) or at their directory's, then
// recovers the log from the backing directory and checks it.
func runFUSE(t *testing.T, seed uint64, w crashtest.Workload, journaled bool, k, keep int) fuseRun {
	backing, mnt := t.TempDir(), t.TempDir()
	// The operator's data directory exists before the engine runs.
	require.NoError(t, os.Mkdir(filepath.Join(backing, "data"), 0o755))
	m, err := powerfs.Mount(backing, mnt, powerfs.Options{
		CrashAtOp: k, Keep: keep, Seed: seed ^ uint64(k),
		JournaledNames: journaled, IgnoreFsync: *flagPLLie,
	})
	if errors.Is(err, powerfs.ErrUnavailable) {
		return fuseRun{skip: err}
	}
	require.NoError(t, err)
	var res fuseRun
	res.lines, res.stderr, res.problems = runChild(t, m, seed, filepath.Join(mnt, "data", "log"))
	if k > 0 {
		// The child may have finished before operation k: the power goes
		// out after the whole workload then.
		require.NoError(t, m.PowerLoss(), "the rollback failed")
	}
	res.ops = m.Ops()
	require.NoError(t, m.Unmount())

	x, closed := expectation(w, res.lines, k > 0)
	res.closed = closed
	e, err := badger.Driver.Open(filepath.Join(backing, "data", "log"), w.Options())
	if err != nil {
		res.problems = append(res.problems, fmt.Sprintf("Open after the power loss failed: %v", err))
		return res
	}
	res.problems = append(res.problems, crashtest.Check(e, x)...)
	if err := e.Close(); err != nil {
		res.problems = append(res.problems, fmt.Sprintf("Close after recovery failed: %v", err))
	}
	return res
}

// runChild runs the workload in a child process on the log directory dir
// and kills the child when the power goes out. It returns the child's
// protocol lines and stderr.
func runChild(t *testing.T, m *powerfs.FS, seed uint64, dir string) ([]string, string, []string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestPowerLossFUSE$")
	cmd.Env = append(os.Environ(), envPLDir+"="+dir, envPLSeed+"="+strconv.FormatUint(seed, 10))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	var (
		lines []string
		read  sync.WaitGroup
	)
	read.Add(1)
	go func() {
		defer read.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	exited := make(chan error, 1)
	go func() {
		read.Wait() // Wait closes stdout: read it all first
		exited <- cmd.Wait()
	}()
	var problems []string
	select {
	case err := <-exited:
		if err != nil {
			problems = append(problems, fmt.Sprintf("the child failed with no power loss: %v", err))
		}
	case <-m.Lost():
		_ = cmd.Process.Kill() // the machine is off
		<-exited
	case <-time.After(childHang):
		_ = cmd.Process.Kill()
		<-exited
		problems = append(problems, fmt.Sprintf("the child hung for %v", childHang))
	}
	return lines, stderr.String(), problems
}

// expectation replays the child's lines into what the recovered log may
// hold, and says whether Close returned. lost: the power went out, so the
// first call with no line was in flight.
func expectation(w crashtest.Workload, lines []string, lost bool) (*crashtest.Expectation, bool) {
	x := crashtest.NewExpectation()
	next := -1 // -1: Open; 0..Steps-1: a step; Steps: Close
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		status := f[1]
		if f[0] == "step" && len(f) >= 3 {
			status = f[2]
		}
		var err error
		if status != lineOK {
			err = errors.New(l)
		}
		switch f[0] {
		case "open":
			if err != nil {
				return x, false
			}
			next = 0
		case "step":
			i, _ := strconv.Atoi(f[1])
			x.Returned(w, i, err)
			if err != nil {
				return x, false
			}
			next = i + 1
		case "close":
			if err != nil {
				return x, false
			}
			x.Closed()
			return x, true
		}
	}
	if lost && next >= 0 && next < w.Steps() {
		x.Returned(w, next, crashtest.ErrInFlight)
	}
	return x, false
}

// runPowerLossChild is the child: it runs the workload on dir, printing a
// line as each call returns, and exits.
func runPowerLossChild(dir string) {
	seed, err := strconv.ParseUint(os.Getenv(envPLSeed), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", envPLSeed, err)
		os.Exit(2)
	}
	w := crashtest.NewWorkload(seed)
	say := func(what string, err error) {
		if err != nil {
			fmt.Fprintf(os.Stdout, "%s %s %v\n", what, lineErr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stdout, "%s %s\n", what, lineOK)
	}
	e, err := badger.Driver.Open(dir, w.Options())
	say("open", err)
	x := crashtest.NewExpectation()
	for i := range w.Steps() {
		err := w.Run(context.Background(), e, x, i)
		x.Returned(w, i, err)
		say(fmt.Sprintf("step %d", i), err)
	}
	say("close", e.Close())
	os.Exit(0)
}
