package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// The one fault injector: the faults of workloads.Fault, Heal and
// RollingRestart on the cluster of a cell. Kill, stop, restart and the
// waits on a cluster's metadata are in cluster.go.

// How a fault hit its nodes, which says how a heal ends it.
const (
	hitKill    = "kill"
	hitStop    = "stop"
	hitFreeze  = "freeze"
	hitIsolate = "isolate"
	hitCut     = "cut"
	hitFill    = "fill_disk"
	hitRolling = "rolling_restart"
)

// hosts readies what a cluster's topology asks of the machine (network
// namespaces, a filesystem per broker) and returns the hosts to place the
// brokers on (nil: loopback ports).
func (st *steps) hosts(t workloads.Topology, dir string) ([]harness.Host, error) {
	if t.DiskBytes > 0 {
		for i := 1; i <= t.Brokers; i++ {
			nd := filepath.Join(dir, fmt.Sprintf("node-%d", i))
			if err := os.MkdirAll(nd, 0o755); err != nil {
				return nil, err
			}
			out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", t.DiskBytes), "tmpfs", nd).CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("mount a tmpfs on %s: %v: %s", nd, err, strings.TrimSpace(string(out)))
			}
			st.disks = append(st.disks, nd)
		}
	}
	if !t.Netns {
		return nil, nil
	}
	lab, err := netlab.New(t.Brokers)
	if err != nil {
		return nil, err
	}
	st.lab = lab
	return lab.Hosts(9092, 9192), nil
}

// unhost undoes hosts.
func (st *steps) unhost() {
	for _, nd := range st.disks {
		_ = exec.Command("umount", "-l", nd).Run()
	}
	if st.lab != nil {
		_ = st.lab.Close()
	}
}

// hit does to the victims what the step says.
func (st *steps) hit(c *harness.Cluster, how string, victims []int32) error {
	switch how {
	case hitKill:
		var errs []error
		for _, id := range victims {
			errs = append(errs, signal(c, id, syscall.SIGKILL))
		}
		for _, id := range victims {
			<-c.Node(id).Child().Exited()
		}
		return errors.Join(errs...)
	case hitStop:
		return c.Stop(victims[0])
	case hitFreeze:
		return signal(c, victims[0], sigStop)
	case hitIsolate, hitCut:
		if st.lab == nil {
			return fmt.Errorf("%s needs topology.netns", how)
		}
		if how == hitIsolate {
			return st.lab.Isolate(int(victims[0]))
		}
		return st.lab.Cut(int(victims[0]))
	case hitFill:
		if st.disks == nil {
			return errors.New("fill_disk needs topology.disk_bytes")
		}
		return fillDisk(st.filler(victims[0]))
	}
	return fmt.Errorf("fault %q", how)
}

func (st *steps) filler(id int32) string { return filepath.Join(st.disks[id-1], "filler") }

// fillDisk writes a file until the write that finds no space left.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill %s: %w", path, err)
		}
	}
}

// signal sends sig to node id's process.
func signal(c *harness.Cluster, id int32, sig syscall.Signal) error {
	ch := c.Node(id).Child()
	if ch == nil {
		return fmt.Errorf("broker %d never started", id)
	}
	if err := kill(ch.Pid(), sig); err != nil {
		return fmt.Errorf("broker %d: %v: %w", id, sig, err)
	}
	return nil
}

// heal ends the last fault (see workloads.Heal).
func (st *steps) heal(ctx context.Context, prefix string) error {
	c, err := st.needCluster("heal")
	if err != nil {
		return err
	}
	if st.how == "" {
		return errors.New("no fault to heal")
	}
	hctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	st.healedAt = time.Now()
	if st.tracked != nil {
		n, last := 0, 0.0
		for _, w := range st.tracked.Writes(0) {
			if !w.At.Before(st.faultAt) && st.affected[w.Partition] && slices.Contains(st.victims, w.Node) {
				n, last = n+1, w.At.Sub(st.faultAt).Seconds()
			}
		}
		st.set(prefix, map[string]float64{"victim_acks": float64(n), "victim_last_ack_s": last})
	}
	how := st.how
	st.how = ""
	id := st.victims[0]
	switch how {
	case hitKill, hitStop:
		for _, id := range st.victims {
			if len(st.victims) == 1 {
				if err := c.WaitFenced(hctx, id); err != nil {
					return err
				}
			}
			if err := c.Start(hctx, id); err != nil {
				return err
			}
		}
		return nil
	case hitFreeze:
		return signal(c, id, sigCont)
	case hitIsolate:
		return st.lab.Rejoin(int(id))
	case hitCut:
		return st.lab.Heal(int(id))
	case hitFill:
		if err := os.Remove(st.filler(id)); err != nil {
			return err
		}
		// A broker that met the full disk may still be on its way out (a
		// controlled shutdown first): wait until it rejoins every ISR or
		// exits, and start one that exited again.
		if exitsOrRejoins(hctx, c, st.lastTopic(), id) {
			st.set(prefix, map[string]float64{"restarted": 1})
			return st.startAgain(hctx, c, id)
		}
	}
	return nil
}

func (st *steps) startAgain(ctx context.Context, c *harness.Cluster, id int32) error {
	if err := c.WaitFenced(ctx, id); err != nil {
		return err
	}
	return c.Start(ctx, id)
}

// exitsOrRejoins waits until node id has exited (true) or every ISR of
// topic is full with it running (false).
func exitsOrRejoins(ctx context.Context, c *harness.Cluster, topic string, id int32) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	isr := make(chan struct{})
	go func() {
		defer close(isr)
		_ = c.WaitISR(ctx, topic, len(c.Nodes()))
	}()
	select {
	case <-c.Node(id).Child().Exited():
		cancel()
		<-isr
		return true
	case <-isr:
		return !c.Node(id).Running()
	}
}

// supervise starts again, as a supervisor (systemd, Kubernetes) would, a
// broker of a cluster on disks of its own that exited on its full disk
// after a heal had found it running; other clusters never do, so that a
// broker that dies unasked fails the round.
func (st *steps) supervise(ctx context.Context) error {
	if st.cluster == nil || st.disks == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, recoverWait)
	defer cancel()
	for _, n := range st.cluster.Nodes() {
		if n.Child() != nil && !n.Running() {
			if err := st.startAgain(sctx, st.cluster, n.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// rollingRestart stops every broker in turn and starts it again (see
// workloads.RollingRestart).
func (st *steps) rollingRestart(ctx context.Context, r *workloads.RollingRestart) error {
	c, err := st.needCluster("rolling_restart")
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 3*recoverWait)
	defer cancel()
	if r.Upgrade {
		if st.cfg.Bin == "" {
			return errors.New("rolling_restart upgrade: no build to upgrade to")
		}
		c.SetBin(st.cfg.Bin)
	}
	st.hitAll(c, hitRolling)
	for _, n := range c.Nodes() {
		if err := c.WaitISR(rctx, st.lastTopic(), len(c.Nodes())); err != nil {
			return err
		}
		if err := c.Stop(n.ID); err != nil {
			return err
		}
		if err := st.startAgain(rctx, c, n.ID); err != nil {
			return err
		}
	}
	// It heals itself: progress and full ISR count from its end.
	st.how, st.healedAt = "", time.Now()
	return nil
}

// hitAll records a fault of every broker, which hits every partition.
func (st *steps) hitAll(c *harness.Cluster, how string) {
	st.victims, st.how, st.faultAt, st.leaderFault = nil, how, time.Now(), false
	for _, n := range c.Nodes() {
		st.victims = append(st.victims, n.ID)
	}
	st.victim = st.victims[0]
	st.affected = st.allPartitions()
}

// allPartitions is every partition of the load topic, as the tracked
// producer writes them.
func (st *steps) allPartitions() map[int32]bool {
	m := map[int32]bool{}
	if st.tracked != nil {
		for p := range st.tracked.Partitions() {
			m[p] = true
		}
	}
	return m
}

// awaitProgress polls the tracked producer until every partition has an
// acknowledgement since the last heal.
func (st *steps) awaitProgress(ctx context.Context) error {
	if st.tracked == nil || st.healedAt.IsZero() {
		return errors.New("wait progress needs a tracked producer and a heal")
	}
	acked := map[int32]bool{}
	for seen := 0; ; {
		ws := st.tracked.Writes(seen)
		seen += len(ws)
		for _, w := range ws {
			if !w.At.Before(st.healedAt) {
				acked[w.Partition] = true
			}
		}
		if int32(len(acked)) == st.tracked.Partitions() {
			return nil
		}
		if !bench.Pause(ctx, probeEvery) {
			return fmt.Errorf("%d of %d partitions acknowledged since the heal: %w", len(acked), st.tracked.Partitions(), ctx.Err())
		}
	}
}

// firstAck is the first acknowledgement since the last fault of a
// partition it hit, by another broker when the victims led it (until a
// heal gives them back).
func (st *steps) firstAck(ws []load.Write) (time.Time, bool) {
	for _, w := range ws {
		byVictim := st.leaderFault && slices.Contains(st.victims, w.Node)
		healed := !st.healedAt.IsZero() && !w.At.Before(st.healedAt)
		if !w.At.Before(st.faultAt) && st.affected[w.Partition] && (!byVictim || healed) {
			return w.At, true
		}
	}
	return time.Time{}, false
}
