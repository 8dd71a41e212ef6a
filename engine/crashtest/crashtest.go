// Package crashtest is the crash suite every durable engine runs:
//
//	func TestCrash(t *testing.T) { crashtest.Run(t, segment.Driver) }
//
// It crashes the engine in two ways and, after each crash, reopens the log
// with a fresh engine and checks the same properties:
//
//   - every batch whose Sync returned nil before the crash is there, byte for
//     byte (batches are made by enginetest.Batch and verified by
//     enginetest.Check, so a batch's bytes are a function of its offsets);
//   - offsets are contiguous from StartOffset to EndOffset, and no read
//     returns ErrCorrupt or bytes the suite did not write: torn and unsynced
//     tails must be cut when the log is opened;
//   - appends resume at EndOffset (one more batch is appended, synced and
//     read back).
//
// # Power loss (subtest PowerLoss)
//
// Only for engines that declare Capabilities.CustomFS (the others are
// skipped, with the reason). The engine runs on pebble's crashable in-memory
// filesystem behind a wrapper that counts every operation that changes the
// disk (writes, syncs, creates, renames, removes, links, mkdirs). A
// deterministic workload (one appender; 100 batches of 1 to 16 records and
// 12 bytes to 6 KiB; a segment size of 4 KiB so segmented engines roll, with
// some batches bigger than a segment; a Sync after about a third of the
// appends; one Truncate, possibly inside a batch; one DeleteBefore after a
// Sync; Close) is run once to count its operations, N. Then for every k in
// 1..N it runs again on a fresh filesystem and the power goes out at the
// k-th operation: a write lands only a random prefix of its bytes, any other
// operation does not happen, and the surviving disk keeps everything synced
// plus a random share (0, 30, 70 or 100 percent, in 4 KiB blocks and
// directory entries) of what was not. A fresh engine opens the surviving disk
// and the properties above are checked. The engine's first Open is part of
// the workload, so crashes while a log is being created are covered too; the
// parent of the log directory exists and is durable beforehand, as an
// operator's data directory would be.
//
// A call counts as acknowledged only if it returned nil before the crash,
// and the crash is taken under the same lock as every fsync, so an
// acknowledgement can never be recorded for data the surviving disk misses.
// A call in flight at the crash (a Truncate, a DeleteBefore) may have taken
// effect or not; both are accepted, nothing in between.
//
// When that recovery passes, at half the crash points (drawn from the seed)
// the power goes out a second time, at a random write operation of the
// recovery itself (its Open, the append, sync and
// Close that follow), and the recovery of that is checked too: everything
// the first recovery found was durable on disk, so it must all be there, and
// nothing it dropped may come back.
//
// Two sweeps, as subtests, differ in what the engine sees after the crash:
//
//   - ProcessStops: nothing. The call that hit the crash and every later one
//     succeed on a disk that no longer matters, as if the machine had halted.
//     This checks recovery alone, even for an engine whose error handling is
//     broken.
//   - CallsFail: every call from the crash on fails, fsyncs included. The
//     engine must return errors: a panic or a hang (-crash.hang) is a
//     failure, reported apart from lost data. A panic in one of the engine's
//     own goroutines cannot be caught and ends the test binary; that is why
//     this sweep runs last, and why the seed is also printed on stderr.
//
// What it proves: for every single crash point of this workload, and one
// more crash inside half of the recoveries, the engine neither loses an acknowledged
// batch nor serves a torn one, whichever unsynced data the disk happened to
// keep; a Truncate or DeleteBefore that returned nil sticks; and the engine
// survives its disk failing under it. What it does not prove: misdirected or
// corrupted sector writes, a disk that lies about fsync, filesystems whose
// rename or directory semantics differ from the MemFS model, interleavings
// the single-appender workload does not produce (concurrent group commit is
// Kill's), or behaviour under SyncInterval and SyncNever. Engines with
// background work (pebble's flushes and compactions) do not always issue
// their operations in the same order, so -crash.k replays the same crash
// point only approximately for them; -crash.seed alone replays the sweep.
//
// Engines that are not CustomFS can still have this model through a crash
// layer of their own underneath the process: NewWorkload gives the same
// seeded steps, Expectation records how each returned (ErrInFlight for the
// one the power cut), and Check judges the reopened log by the properties
// above. engines/badger does that on a FUSE filesystem (engine/powerfs).
//
// # Process kill (subtest Kill)
//
// Every durable engine, on the real filesystem in t.TempDir(). The test
// re-executes its own binary (os.Args[0] with -test.run set to the exact
// name of the Kill subtest) with environment variables that make Run, in
// the child, open the engine with SyncAlways and append from several
// goroutines: offsets are assigned under a mutex and Sync is called outside
// it, so many syncs share flushes (group commit). After each Sync returns the
// child prints the batch on stdout; one goroutine also moves the log start
// with DeleteBefore now and then and prints before and after. The child never
// stops on its own (it exits only if its stdin closes, that is if the parent
// test died). The parent kills it with SIGKILL after a random number of
// acknowledgements plus a random delay (one round in five, a few
// milliseconds after it starts opening the log: during its recovery of the
// previous round's crash), reopens the engine, checks the
// properties above against every acknowledged batch, appends one batch,
// closes, and starts the child again on the same directory: each round is a
// recovery of the previous recovery. Batches the child wrote but had not
// acknowledged may survive; they must be whole and contiguous.
//
// What it proves: acknowledged data reaches the OS before Sync returns (no
// acknowledgement from user-space buffers), recovery copes with a process
// that died anywhere (mid-write, mid-roll, mid-DeleteBefore) and with logs
// recovered many times over. What it does not prove: anything about fsync,
// since the OS page cache survives a process kill; that is what PowerLoss is
// for. Kill rounds are not reproducible exactly (they depend on timing); the
// seed reproduces the choices (how many acks, how long to wait, batch sizes).
//
// KillSyncInterval and KillSyncNever run the same rounds with the child
// under those policies (the interval 5 ms), with the same checks: there a
// Sync promises nothing against a power loss, but everything against a
// process crash, so every acknowledged batch must survive a kill too.
//
// # A store of many logs (subtest Store)
//
// The same two crash models, on a Store (Driver.OpenStoreIn) of several
// logs at once: the broker's shape.
//
//   - Store/PowerLoss (CustomFS engines): a workload of one goroutine over
//     four logs of one store: three created at the start, one half way;
//     about 120 appends spread among those open, a Sync of a random log
//     after a third of them, a Truncate of one log, a DeleteBefore of
//     another, and one log closed and deleted three fifths of the way
//     through; then every log and the store closed. It crashes at every
//     write operation as PowerLoss does (both sweeps, no second crash) and
//     checks that every log whose Create returned is listed and every log
//     whose Delete returned is not (one whose Delete was in flight may be
//     either), that no log is listed that no Create made (but for one in
//     flight, which must be empty), that each log holds what PowerLoss's
//     rules allow, that appends resume on each, and that a new log gets an
//     id none had. For an engine that declares SharedCommit, a Sync of one
//     log acknowledges the appends made to every log before it, so those
//     must survive too.
//   - Store/Kill (every durable engine): the child keeps three logs,
//     appending to each from two goroutines (offsets under a lock of each
//     log's, Sync outside it, DeleteBefore now and then), and makes
//     short-lived logs one after another beside them (created, four
//     batches acknowledged, closed, deleted). After each SIGKILL the
//     parent checks every log against what the child acknowledged and the
//     listing against the Creates and Deletes that returned, then deletes
//     every log but the three kept ones, and starts the child again.
//
// # Flags
//
//	-crash.seed=N   rerun one seed (0, the default, draws one from the clock)
//	-crash.k=K      PowerLoss: crash only at operation K of the workload
//	-crash.long     a bigger PowerLoss workload and more seeds
//	-crash.kills=N  Kill: how many kill rounds (default 20)
//	-crash.hang=D   how long one engine call may take before it counts as a hang
//	-crash.v        print each PowerLoss crash point on stderr as it starts
//
// Every run logs its seed first, and every failure says the go test command
// that replays it.
package crashtest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka/engine"
)

var (
	flagSeed  = flag.Uint64("crash.seed", 0, "crashtest: rerun this seed (0: draw one from the clock)")
	flagK     = flag.Int("crash.k", 0, "crashtest: PowerLoss crashes only at this write operation (0: every one)")
	flagLong  = flag.Bool("crash.long", false, "crashtest: a bigger PowerLoss workload and more seeds")
	flagKills = flag.Int("crash.kills", 20, "crashtest: how many times Kill kills the engine's process")
	flagV     = flag.Bool("crash.v", false, "crashtest: print each PowerLoss crash point on stderr as it starts (finds the one that takes the binary down)")
	flagHang  = flag.Duration("crash.hang", 15*time.Second, "crashtest: an engine call taking longer than this is reported as a hang")
)

// Run runs both crash models against the driver as subtests Kill (and
// KillSyncInterval, KillSyncNever) and PowerLoss, on a log opened alone,
// then on a store of several logs as Store/Kill and Store/PowerLoss.
// Engines that do not declare Capabilities.Durable are skipped: they
// promise nothing across a crash.
func Run(t *testing.T, d engine.Driver) {
	if os.Getenv(envChild) == "" {
		// The child of a Kill round prints only its acknowledgements.
		t.Logf("crashtest: engine %s, seed %d (rerun with -crash.seed=%d)", d.Name, seed(), seed())
		// Also on stderr at once: t.Logf output is lost if an engine's own
		// goroutine panics and takes the test binary down.
		fmt.Fprintf(os.Stderr, "crashtest: %s on engine %s, seed %d (replay: %s; add -crash.v to see each crash point)\n",
			t.Name(), d.Name, seed(), replay(t, replayFlags(seed(), 0)))
	}
	// Kill first and CallsFail last: an engine goroutine that panics on an
	// injected error takes the whole test binary down with it.
	t.Run("Kill", func(t *testing.T) { testKill(t, d, engine.SyncAlways, seed()) })
	t.Run("KillSyncInterval", func(t *testing.T) { testKill(t, d, engine.SyncInterval, seed()) })
	t.Run("KillSyncNever", func(t *testing.T) { testKill(t, d, engine.SyncNever, seed()) })
	t.Run("PowerLoss", func(t *testing.T) { testPowerLoss(t, d, seed()) })
	t.Run("Store", func(t *testing.T) {
		t.Run("Kill", func(t *testing.T) { testStoreKill(t, d, seed()) })
		t.Run("PowerLoss", func(t *testing.T) { testStorePowerLoss(t, d, seed()) })
	})
}

var drawnSeed = uint64(time.Now().UnixNano())

// seed is the run's master seed: -crash.seed, or one drawn at start-up so
// that every test in the binary shares it.
func seed() uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	return drawnSeed
}

// needDurable skips engines that keep nothing across a crash.
func needDurable(t *testing.T, d engine.Driver) {
	if !d.Caps.Durable {
		t.Skipf("engine %s does not declare Durable: it promises nothing across a crash", d.Name)
	}
}

// replay is the go test command that reruns the running test with extra flags.
func replay(t *testing.T, flags string) string {
	return fmt.Sprintf("go test %s -run '%s' %s", packageDir(), runPattern(t.Name()), flags)
}

// runPattern is a -test.run pattern matching exactly the test called name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// packageDir is the running test's package as a path relative to the module
// root (go test runs a package's tests in its directory), or "." if unknown.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}

// errHang is what guard reports for a call that did not return in time.
var errHang = errors.New("crashtest: engine call hung")

// panicError is what guard reports for a call that panicked.
type panicError struct {
	what  string
	value any
	stack []byte
}

func (p *panicError) Error() string {
	return fmt.Sprintf("%s panicked: %v\n%s", p.what, p.value, p.stack)
}

// guard runs fn and turns a panic into a *panicError and a call that
// outlives -crash.hang into errHang (the goroutine is abandoned: a hung
// engine cannot be stopped from outside). Panics in the engine's own
// goroutines cannot be caught: they end the test binary.
func guard(what string, fn func()) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- &panicError{what: what, value: p, stack: debug.Stack()}
			}
		}()
		fn()
		done <- nil
	}()
	timer := time.NewTimer(*flagHang)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("%s: %w for %v; where it is stuck:\n%s", what, errHang, *flagHang, guardedStacks())
	}
}

// guardedStacks is the stack of every goroutine guard started that is still
// running: where a hung engine call is stuck.
func guardedStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "crashtest.guard.func1") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
