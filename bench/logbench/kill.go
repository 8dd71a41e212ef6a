package logbench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/engine"
)

// Restart after kill -9: the log the bulk ingest left (Config.Records, a
// GiB in the engines profile) is opened by a child process, which appends
// killAppendBytes more in synced batches, as a producer would, and is
// killed with SIGKILL; a second child then opens the log and reads its
// first record, timed from before Open, and is killed in turn, so that
// every restart measured recovers from a kill, not from a clean Close.
// Warm is with the page cache as the kill left it; cold evicts the data
// first, after a second appending child was killed.

// Workloads of the restart after a kill.
const (
	WorkloadKill     = "kill-restart"
	WorkloadKillCold = "kill-restart-cold"
)

// ChildCmd is the subcommand of the benchmark's own binary (Config.Self)
// that runs one side of a kill: ServeChild.
const ChildCmd = "engine-child"

// killAppendBytes is what the appending child writes before it is killed:
// more than any engine's memtable, so that recovery has a write-ahead log
// (or a tail) of its usual size to go over.
const killAppendBytes = 128 << 20

// ServeChild is the child side of a kill: with -append it opens the log
// and appends -bytes in batches of 1000 records of 100 bytes, each synced
// (sync=always), then prints "ready"; without it, it opens the log, reads
// its first record and prints "took <nanoseconds>". Either way it then
// waits to be killed.
func ServeChild(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(ChildCmd, flag.ContinueOnError)
	name := fs.String("engine", "", "engine")
	dir := fs.String("dir", "", "the log's directory")
	appendMode := fs.Bool("append", false, "append -bytes, then wait")
	n := fs.Int64("bytes", killAppendBytes, "bytes to append")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	e, err := engine.Open(*name, *dir, engine.Options{Sync: engine.SyncAlways})
	if err != nil {
		return fmt.Errorf("%s: open: %w", ChildCmd, err)
	}
	if *appendMode {
		p := bench.NewPayload(2, 8<<20)
		l := &engineLog{e: e, next: e.EndOffset()}
		data := make([]byte, 100_000) // Append keeps none of it
		for written := int64(0); written < *n; written += int64(len(data)) {
			p.Fill(l.next, data)
			stamp(data, l.next)
			if err := l.WriteBatch(data, 1000); err != nil {
				return fmt.Errorf("%s: %w", ChildCmd, err)
			}
		}
		fmt.Fprintln(stdout, "ready")
	} else {
		bs, err := e.Read(e.StartOffset(), 1)
		if err != nil || len(bs) == 0 {
			return fmt.Errorf("%s: first read after the restart: %d batches, %v", ChildCmd, len(bs), err)
		}
		fmt.Fprintln(stdout, "took", time.Since(start).Nanoseconds())
	}
	<-ctx.Done() // killed before this, by design
	return e.Close()
}

// killOnce runs one kill cycle on dir: an appending child killed, the
// page cache evicted when cold, then a restarting child timed and killed.
func (r *runner) killOnce(s Subject, dir string, rep int, cold bool) Sample {
	wl := WorkloadKill
	if cold {
		wl = WorkloadKillCold
	}
	args := []string{ChildCmd, "-engine", s.Name, "-dir", dir}
	n := min(killAppendBytes, r.cfg.Records*int64(r.cfg.RecordBytes)) // a smoke run appends less
	if _, err := runChild(r.cfg.Self, append(args, "-append", "-bytes", strconv.FormatInt(n, 10))); err != nil {
		return failed(wl, rep, fmt.Errorf("appending child: %w", err))
	}
	cache := "warm (as the kill left it)"
	if cold {
		var err error
		if cache, err = evict(dir); err != nil {
			return failed(wl, rep, err)
		}
	}
	before := r.deviceStats()
	line, err := runChild(r.cfg.Self, args)
	if err != nil {
		return failed(wl, rep, fmt.Errorf("restarting child: %w", err))
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(line, "took "), 10, 64)
	if err != nil {
		return failed(wl, rep, fmt.Errorf("restarting child said %q", line))
	}
	return Sample{Workload: wl, Rep: rep, Records: 1, Seconds: time.Duration(ns).Seconds(),
		Cache: cache, Device: deviceDelta(before, r.deviceStats())}
}

// runChild starts the child, waits for its one line and kills it with
// SIGKILL.
func runChild(self string, args []string) (string, error) {
	cmd := exec.Command(self, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, rerr := bufio.NewReader(out).ReadString('\n')
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if rerr != nil {
		if errors.Is(rerr, io.EOF) {
			rerr = fmt.Errorf("it exited: %s", strings.TrimSpace(stderr.String()))
		}
		return "", rerr
	}
	return strings.TrimSpace(line), nil
}
