package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

func testKill(t *testing.T, d engine.Driver, policy engine.SyncPolicy, master uint64) {
	needDurable(t, d)
	if msg := killRounds(t, d, policy, master, *flagKills); msg != "" {
		t.Error(msg)
	}
}

// killRounds kills and recovers the engine kills times, its child appending
// under policy, and returns the first failure's report, or "". In a Kill
// child it runs the child instead and never returns.
func killRounds(t *testing.T, d engine.Driver, policy engine.SyncPolicy, master uint64, kills int) string {
	if name := os.Getenv(envChild); name != "" {
		if name != d.Name {
			t.Skipf("a Kill child for engine %s, not %s", name, d.Name)
		}
		runChild(d) // never returns
	}
	dir := filepath.Join(t.TempDir(), "log")
	rng := rand.New(rand.NewPCG(master, 0x6b696c6c))
	var st killState
	for round := range kills {
		// One round in five kills the child while it recovers the log (Open),
		// the others after up to 40 acknowledgements.
		acks := 1 + rng.IntN(40)
		delay := time.Duration(rng.IntN(20_000)) * time.Microsecond
		if rng.IntN(5) == 0 {
			acks, delay = 0, time.Duration(rng.IntN(5_000))*time.Microsecond
		}
		run, err := runChildOnce(t, d, policy, dir, rng.Uint64(), acks, delay)
		if err == nil {
			err = run.problem()
		}
		var bad []string
		if err != nil {
			bad = append(bad, err.Error())
		} else {
			bad = st.reopen(d, dir, run)
		}
		if len(bad) > 0 {
			heard := 0
			if run != nil {
				heard = len(run.acks)
			}
			return fmt.Sprintf("seed %d: kill round %d of %d (SIGKILL %v after acknowledgement %d, 0 meaning the start of Open; %d heard in all):\n  - %s\n  replay: %s",
				master, round+1, kills, delay, acks, heard, strings.Join(bad, "\n  - "),
				replay(t, fmt.Sprintf("-crash.seed=%d -crash.kills=%d", master, round+1)))
		}
	}
	t.Logf("seed %d, sync=%s: %d kills survived; the log holds %d batches in [%d, %d)", master, policy, kills, len(st.known), st.start, st.acked)
	return ""
}

// childRun is what the parent heard from one child before it died.
type childRun struct {
	opening bool // it is opening the log: recovering the last round's
	heard   int  // acknowledgements heard
	acks    []engine.Batch
	dels    []int64 // DeleteBefore calls started
	deleted []int64 // DeleteBefore calls that returned nil
	stderr  string
	other   []string // stdout lines that are not the protocol's
}

func (r *childRun) add(line string) {
	f := strings.Fields(line)
	nums := make([]int64, 0, 3)
	for _, s := range f[min(1, len(f)):] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			r.other = append(r.other, line)
			return
		}
		nums = append(nums, n)
	}
	switch {
	case len(f) == 1 && f[0] == lineOpening:
		r.opening = true
	case len(f) == 4 && f[0] == lineAck:
		r.acks = append(r.acks, enginetest.Batch(nums[0], int32(nums[1]), int(nums[2])))
		r.heard++
	case len(f) == 2 && f[0] == lineDel:
		r.dels = append(r.dels, nums[0])
	case len(f) == 2 && f[0] == lineDeleted:
		r.deleted = append(r.deleted, nums[0])
	default:
		r.other = append(r.other, line)
	}
}

// problem reports what the child itself said went wrong: the race detector
// and the testing package write to its stderr and stdout.
func (r *childRun) problem() error {
	if strings.Contains(r.stderr, "DATA RACE") {
		return fmt.Errorf("the child reported a data race:\n%s", r.stderr)
	}
	return nil
}

// runChildOnce starts the child on dir, waits for wantAcks
// acknowledgements (or, if wantAcks is 0, for the child to start opening
// the log), waits delay more, kills it with SIGKILL and returns everything
// it said.
func runChildOnce(t *testing.T, d engine.Driver, policy engine.SyncPolicy, dir string, seed uint64, wantAcks int, delay time.Duration) (*childRun, error) {
	run := &childRun{}
	env := []string{envDir + "=" + dir, envSeed + "=" + strconv.FormatUint(seed, 10), envSync + "=" + policy.String()}
	err := runChildProcess(t, d, env, run.add, run, wantAcks, delay)
	return run, err
}

// runChildProcess runs the child with env added to its environment, hands
// each line it prints to add, and kills it (SIGKILL) once run has heard
// wantAcks acknowledgements (or the start of its Open, if wantAcks is 0)
// and delay has passed; run.stderr gets what it wrote there.
func runChildProcess(t *testing.T, d engine.Driver, env []string, add func(string), run *childRun, wantAcks int, delay time.Duration) error {
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1")
	cmd.Env = append(append(os.Environ(), envChild+"="+d.Name), env...)
	stdin, err := cmd.StdinPipe() // the child exits if this closes
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the child: %w", err)
	}
	lines := make(chan string)
	go readLines(stdout, lines)

	err = listen(run, lines, add, wantAcks, delay)
	_ = cmd.Process.Kill() // SIGKILL: no chance to flush anything
	for l := range lines { // what it wrote before it died
		add(l)
	}
	waitErr := cmd.Wait()
	run.stderr = stderr.String()
	if err != nil {
		return fmt.Errorf("%w (child: %v)\nchild stderr:\n%s\nchild stdout: %q", err, waitErr, run.stderr, run.other)
	}
	return nil
}

var errChildExited = errors.New("the child exited before it was killed")

// listen hands the child's lines to add until run has heard wantAcks
// acknowledgements (or the start of its Open, if wantAcks is 0) and delay
// has passed after that.
func listen(run *childRun, lines <-chan string, add func(string), wantAcks int, delay time.Duration) error {
	// The child is a whole test binary, maybe built with -race, on a busy
	// machine: give it a minute to start before calling it hung.
	patience := max(*flagHang, time.Minute)
	hang := time.NewTimer(patience)
	defer hang.Stop()
	for !run.opening || run.heard < wantAcks {
		select {
		case l, ok := <-lines:
			if !ok {
				return errChildExited
			}
			add(l)
		case <-hang.C:
			return fmt.Errorf("the child acknowledged %d batches in %v, want %d: %w", run.heard, patience, wantAcks, errHang)
		}
	}
	kill := time.NewTimer(delay)
	defer kill.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return errChildExited
			}
			add(l)
		case <-kill.C:
			return nil
		}
	}
}

// readLines sends every complete line from r, then closes lines. A line cut
// short by the kill (none should be: each is one small write) is dropped.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	br := bufio.NewReader(r)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return
		}
		lines <- strings.TrimSuffix(l, "\n")
	}
}

// killState is what the parent knows is durable across rounds.
type killState struct {
	known []engine.Batch // acknowledged or seen after recovery, sorted by base
	start int64          // the start the last recovery saw
	acked int64          // every offset below it is durable
}

// reopen folds the child's acknowledgements into the state, reopens the
// log, checks it, appends one batch and closes it. The recovered log becomes
// the known state for the next round. Every batch the child acknowledged
// must survive, under every policy: a Sync promises that much against a
// process crash.
func (st *killState) reopen(d engine.Driver, dir string, run *childRun) []string {
	x := st.expectAfter(run)
	var (
		bad  []string
		next killState
	)
	err := guard("recovery", func() {
		e, err := d.Open(dir, killOptions(engine.SyncAlways))
		if err != nil {
			bad = append(bad, fmt.Sprintf("Open after the kill failed: %v", err))
			return
		}
		r, b := readLog(e)
		bad = append(bad, b...)
		bad = append(bad, compare(r, x)...)
		nb, b := resume(context.Background(), e, 3, 200)
		bad = append(bad, b...)
		if err := e.Close(); err != nil {
			bad = append(bad, fmt.Sprintf("Close after recovery failed: %v", err))
		}
		next = killState{known: append(r.batches, nb), start: r.start, acked: nb.NextOffset()}
	})
	if errors.Is(err, errHang) {
		return []string{err.Error()}
	}
	if err != nil {
		bad = append(bad, err.Error())
	}
	*st = next
	return bad
}

// expectAfter is what the log may hold after a child's run that said run,
// from st, what the parent knew before it.
func (st *killState) expectAfter(run *childRun) expect {
	x := expect{startLo: st.start, startHi: st.start, acked: st.acked}
	known := append(append([]engine.Batch(nil), st.known...), run.acks...)
	sort.Slice(known, func(i, j int) bool { return known[i].BaseOffset < known[j].BaseOffset })
	x.batches = known
	for _, b := range known {
		x.acked = max(x.acked, b.NextOffset())
	}
	for _, off := range run.deleted {
		x.startLo = max(x.startLo, off)
	}
	x.startHi = x.startLo
	for _, off := range run.dels {
		x.startHi = max(x.startHi, off)
	}
	return x
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
