// Package faults breaks a three-broker cluster on purpose and checks what
// its clients were told: the fault matrix of cmd/bench's faults profile
// (results/faults.md) and of the CI test beside it.
//
// A cell is one engine and one fault. Its brokers are cmd/broker processes
// (broker/harness's Cluster), each on its own host of a broker/harness/netlab (a
// network namespace with its own address), replication factor 3 and
// min.insync.replicas 2. Under acks=all idempotent load from franz-go
// (load.Tracked, which keeps every acknowledgement and the broker that
// gave it) and from kcat (load.Kcat), with a consumer reading all along,
// the fault is injected Rounds times and healed each time; then everything
// is read back and checked (check.go) for Jepsen's anomalies: lost-write,
// duplicate, inconsistent-offsets, nonmonotonic-poll, poll-skip; and for
// progress: every partition acknowledges again within ProgressBound of
// the heal. Each round records the time from the fault to the first
// acknowledgement, the longest gap between two acknowledgements, and the
// time from the heal to every ISR full again.
package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// The cluster of every cell.
const (
	Brokers    = 3
	MinISR     = 2
	Partitions = 3
	Topic      = "faults"
)

// Defaults of the committed run.
const (
	DefaultRounds         = 3
	DefaultRate           = 500 // records per second from franz-go
	DefaultRecordBytes    = 100
	DefaultKcatBatch      = 20
	DefaultSessionTimeout = 3 * time.Second
	DefaultProgressBound  = 15 * time.Second
	DefaultDiskBytes      = 512 << 20
)

// Bounds of the waits, past which a round fails with what it waited for.
const (
	isrBound  = 90 * time.Second
	warmup    = 2 * time.Second
	settle    = time.Second
	pollEvery = 5 * time.Millisecond
)

// Config is one run of the matrix.
type Config struct {
	bench.Servers
	Engines []string
	Faults  []string
	// Rounds is how many times each cell injects and heals its fault.
	Rounds int
	// Rate and RecordBytes are the franz-go producer's; KcatBatch the
	// records per kcat process (0: no kcat load).
	Rate        float64
	RecordBytes int
	KcatBatch   int
	// Kcat is the kcat binary ("": looked up in PATH; none: franz-go only,
	// said in the report).
	Kcat string
	// SessionTimeout is the brokers' -broker-session-timeout; a stopped
	// or cut-off broker stays so for twice as long.
	SessionTimeout time.Duration
	// ProgressBound is how soon after a heal every partition must
	// acknowledge again.
	ProgressBound time.Duration
	// DiskBytes is the size of each broker's filesystem (a tmpfs) in the
	// cells that fill a disk.
	DiskBytes int64
	// UpgradeFrom is the older broker binary the rolling-upgrade cells
	// start on ("": those cells fail, saying so).
	UpgradeFrom string
}

func (c *Config) defaults() {
	c.Servers.Defaults()
	if c.Rounds < 1 {
		c.Rounds = DefaultRounds
	}
	c.Rate = max(c.Rate, 1)
	c.RecordBytes = max(c.RecordBytes, DefaultRecordBytes)
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.ProgressBound <= 0 {
		c.ProgressBound = DefaultProgressBound
	}
	if c.DiskBytes <= 0 {
		c.DiskBytes = DefaultDiskBytes
	}
	if c.Kcat == "" && c.KcatBatch > 0 {
		c.Kcat, _ = exec.LookPath("kcat")
	}
}

// hold is how long a fault that lasts lasts.
func (c Config) hold() time.Duration { return 2 * c.SessionTimeout }

// Run runs every cell, engine by engine, and returns the matrix; a cell
// that fails is recorded with its error and the others go on.
// netlab.ErrUnavailable is returned before anything runs where the hosts
// cannot be made.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	for _, f := range cfg.Faults {
		if _, ok := kinds[f]; !ok {
			return nil, fmt.Errorf("faults: unknown fault %q (want one of %v)", f, Names())
		}
	}
	lab, err := netlab.New(Brokers)
	if err != nil {
		return nil, err
	}
	if err := lab.Close(); err != nil {
		return nil, err
	}
	facts, err := cfg.Begin()
	if err != nil {
		return nil, err
	}
	res := &Result{Facts: facts, Config: summary(cfg)}
	for _, eng := range cfg.Engines {
		for _, f := range cfg.Faults {
			if ctx.Err() != nil {
				break
			}
			c := runCell(ctx, cfg, eng, f)
			fmt.Fprintf(cfg.Log, "%s\n", c.say())
			res.Cells = append(res.Cells, c)
		}
	}
	res.Facts.End()
	res.judge()
	return res, ctx.Err()
}

// cell is one running cell: its hosts, cluster and load.
type cell struct {
	cfg     Config
	kind    kind
	dir     string
	lab     *netlab.Lab
	c       *harness.Cluster
	disks   *disks
	tracked *load.Tracked
	kcat    *load.Kcat
	reader  *reader
	logf    func(format string, args ...any)
}

func runCell(ctx context.Context, cfg Config, engine, fault string) Cell {
	out := Cell{Engine: engine, Fault: fault}
	e := &cell{cfg: cfg, kind: kinds[fault], logf: func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "%s %s: %s\n", engine, fault, fmt.Sprintf(format, args...))
	}}
	defer e.close()
	if err := e.start(ctx, engine, fault); err != nil {
		out.Error = err.Error()
		return out
	}
	bench.Pause(ctx, warmup)
	for i := range cfg.Rounds {
		r := e.round(ctx)
		e.logf("round %d: %s", i+1, r.say())
		out.Rounds = append(out.Rounds, r)
		if r.Error != "" {
			break
		}
	}
	e.finish(ctx, &out)
	return out
}

func (e *cell) start(ctx context.Context, engine, fault string) error {
	var err error
	if e.lab, err = netlab.New(Brokers); err != nil {
		return err
	}
	dir := filepath.Join(e.cfg.Dir, engine+"-"+fault)
	e.dir = dir
	if e.kind.disk {
		if e.disks, err = mountDisks(dir, Brokers, e.cfg.DiskBytes); err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	args := append([]string{"-min-insync-replicas", fmt.Sprint(MinISR), "-default-replication-factor", fmt.Sprint(Brokers),
		"-broker-session-timeout", e.cfg.SessionTimeout.String()}, e.cfg.Args...)
	bin := e.cfg.Bin
	if e.kind.upgrade {
		if e.cfg.UpgradeFrom == "" {
			return errors.New("no older broker binary to upgrade from (cmd/bench faults -upgrade-from)")
		}
		bin = e.cfg.UpgradeFrom
	}
	e.c, err = harness.StartCluster(sctx, harness.ClusterConfig{Bin: bin, Engine: engine, Brokers: Brokers, Dir: dir,
		Sync: e.cfg.Sync, Args: args, Log: e.cfg.ServerLog, Hosts: e.lab.Hosts(9092, 9192)})
	if err != nil {
		return err
	}
	if _, err := e.c.CreateTopic(sctx, Topic, Partitions, Brokers, nil); err != nil {
		return err
	}
	if err := e.c.WaitISR(sctx, Topic, Brokers); err != nil {
		return err
	}
	seeds := e.c.Seeds()
	if e.reader, err = startReader(ctx, seeds, Topic); err != nil {
		return err
	}
	e.tracked, err = load.StartTracked(ctx, load.TrackedConfig{Client: load.Client{Brokers: seeds}, Topic: Topic,
		Partitions: Partitions, Rate: e.cfg.Rate, RecordBytes: e.cfg.RecordBytes})
	if err != nil {
		return err
	}
	if e.cfg.Kcat != "" && e.cfg.KcatBatch > 0 {
		e.kcat, err = load.StartKcat(ctx, load.KcatConfig{Path: e.cfg.Kcat, Brokers: seeds, Topic: Topic, Batch: e.cfg.KcatBatch})
	}
	return err
}

// finish stops the load once every ISR is full again, reads everything
// back and checks it.
func (e *cell) finish(ctx context.Context, out *Cell) {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	tr := e.tracked.Stop(30 * time.Second)
	e.tracked = nil
	var kr load.KcatResult
	if e.kcat != nil {
		kr = e.kcat.Stop()
		e.kcat = nil
	}
	out.AckedFranz, out.AckedKcat = len(tr.Acked), len(kr.Acked)
	out.Unacked = tr.Failed + int64(kr.Failed*e.cfg.KcatBatch)
	if note, err := e.supervise(fctx); err != nil {
		out.Error = fmt.Sprintf("after the last round: %v", err)
	} else if note != "" && len(out.Rounds) > 0 {
		last := &out.Rounds[len(out.Rounds)-1]
		last.Note = strings.TrimPrefix(last.Note+"; "+note+" after the round", "; ")
	}
	if err := e.c.WaitISR(fctx, Topic, Brokers); err != nil {
		out.Error = fmt.Sprintf("after the last round: %v", err)
	}
	live := e.reader.stop()
	final, err := readAll(fctx, e.c.Seeds(), Topic)
	if err != nil {
		out.Error = errors.Join(errors.New(out.Error), err).Error()
		return
	}
	out.Consumed = final.count()
	out.Anomalies = check(tr.Acked, kr.Acked, final, live)
	for _, r := range out.Rounds {
		if r.Error == "" && r.Progress > e.cfg.ProgressBound.Seconds() {
			out.Anomalies.add("no-progress", fmt.Sprintf("round at %s: every partition acknowledged again only %s after the heal",
				r.Victims, bench.Millis(r.Progress)))
		}
	}
}

func (e *cell) close() {
	if e.tracked != nil {
		e.tracked.Stop(0)
	}
	if e.kcat != nil {
		e.kcat.Stop()
	}
	if e.reader != nil {
		e.reader.stop()
	}
	if e.c != nil {
		e.c.Close()
	}
	if e.disks != nil {
		e.disks.unmount()
	}
	if e.lab != nil {
		_ = e.lab.Close()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}
