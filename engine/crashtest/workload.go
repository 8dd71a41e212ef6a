package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// stepKind is one call the power-loss workload makes.
type stepKind int

const (
	stepAppend stepKind = iota
	stepSync
	stepTruncate
	stepDeleteBefore
)

type step struct {
	kind   stepKind
	batch  engine.Batch // stepAppend
	offset int64        // stepTruncate, stepDeleteBefore
}

func (s step) String() string {
	switch s.kind {
	case stepAppend:
		return "Append " + describe(s.batch)
	case stepSync:
		return "Sync"
	case stepTruncate:
		return fmt.Sprintf("Truncate(%d)", s.offset)
	default:
		return fmt.Sprintf("DeleteBefore(%d)", s.offset)
	}
}

// plan is the power-loss workload: one appender, so the order of the
// engine's calls (and, background work aside, of its filesystem operations)
// is the same on every run. It is made once per seed, with the expected log
// simulated alongside, so every offset in it is concrete.
type plan struct {
	steps []step
}

// workloadSize is the number of appends; -crash.long raises it.
func workloadSize() int {
	if *flagLong {
		return 600
	}
	return 100
}

// makePlan draws a workload from rng: batches of 1 to 16 records and 12
// bytes to a little over a segment, a Sync after about a third of them, one
// Truncate (possibly inside a batch) two fifths of the way through and one
// DeleteBefore (possibly inside a batch, after a Sync) at seven tenths.
func makePlan(rng *rand.Rand, appends int) plan {
	var (
		p       plan
		log     []engine.Batch // the expected log, to pick offsets from
		start   int64
		written = map[int64][2]int{} // base -> records, size of the last batch written there
	)
	end := func() int64 {
		if len(log) == 0 {
			return start
		}
		return log[len(log)-1].NextOffset()
	}
	for i := range appends {
		switch i {
		case appends * 2 / 5:
			off := end() - 1 - rng.Int64N(max(min(end()-start, 40), 1))
			off = max(off, start)
			p.steps = append(p.steps, step{kind: stepTruncate, offset: off})
			for len(log) > 0 && log[len(log)-1].NextOffset() > off {
				log = log[:len(log)-1]
			}
		case appends * 7 / 10:
			off := start + 1 + rng.Int64N(max((end()-start)/2, 1))
			p.steps = append(p.steps, step{kind: stepSync}, step{kind: stepDeleteBefore, offset: off})
			start = off
			for len(log) > 0 && log[0].NextOffset() <= off {
				log = log[1:]
			}
		}
		records := int32(1 + rng.IntN(16))
		size := 12 + rng.IntN(1200)
		if rng.IntN(8) == 0 {
			size = segmentBytes + rng.IntN(segmentBytes/2)
		}
		// A batch rewritten after the Truncate must differ from the one it
		// replaces, or a truncation that did not stick would go unseen.
		if w, ok := written[end()]; ok && w == [2]int{int(records), size} {
			size++
		}
		b := enginetest.Batch(end(), records, size)
		written[b.BaseOffset] = [2]int{int(records), size}
		log = append(log, b)
		p.steps = append(p.steps, step{kind: stepAppend, batch: b})
		if rng.IntN(3) == 0 {
			p.steps = append(p.steps, step{kind: stepSync})
		}
	}
	return p
}

// segmentBytes is the roll size the workload asks for: small, so that
// segmented engines roll many times and some batches are bigger than it.
const segmentBytes = 4 << 10

// outcome is what running the plan on an engine that may lose power left.
type outcome struct {
	x        expect // what the recovered log may look like
	stopped  string // why the workload stopped early, if it did
	finished bool   // every step and Close returned nil before the crash
}

// errLostDuring marks a call that returned nil but only after the power
// went out: what it did may or may not be on the surviving disk.
var errLostDuring = errors.New("crashtest: returned nil, but the power went out before it returned")

// execute opens the engine on fs, runs the plan and closes the engine,
// recording in o as it goes (so that o is meaningful even if the engine
// panics). It stops at the first error and at the first call that returns
// after the crash: such a call was in flight when the power went out, and
// o.x allows both its effect and its absence. That is also what makes an
// acknowledgement sound: a Sync counts only if it returned nil before the
// crash, and the crash is ordered with every fsync (see crashFS).
func execute(ctx context.Context, d engine.Driver, fs *crashFS, dir string, p plan, o *outcome) {
	o.x = expect{strict: true}
	e, err := d.Open(dir, engineOptions(fs))
	switch {
	case err != nil:
		o.stopped = fmt.Sprintf("Open: %v", err)
		return
	case fs.lost():
		o.stopped = "Open: " + errLostDuring.Error()
		_ = e.Close()
		return
	}
	for _, s := range p.steps {
		if err := apply(ctx, e, s, &o.x, fs.lost); err != nil {
			o.stopped = fmt.Sprintf("%v: %v", s, err)
			_ = e.Close() // errors expected: the disk is gone
			return
		}
	}
	if err := e.Close(); err != nil {
		o.stopped = fmt.Sprintf("Close: %v", err)
		return
	}
	if fs.lost() {
		o.stopped = "Close: " + errLostDuring.Error()
		return
	}
	o.x.acked = o.x.end() // Close syncs what was appended
	o.finished = true
}

// apply runs one step and updates x to what may be on disk afterwards. A
// step that fails, or returns after the power went out (lost), was in
// flight: x allows both outcomes and apply returns an error.
func apply(ctx context.Context, e engine.LogEngine, s step, x *expect, lost func() bool) error {
	if lost() {
		return errPowerLost // not started: the workload stopped with the machine
	}
	err := s.run(ctx, e, x)
	if err == nil && lost() {
		err = errLostDuring
	}
	x.record(s, err)
	return err
}

// run makes the step's call on e; x is what the log holds before it.
func (s step) run(ctx context.Context, e engine.LogEngine, x *expect) error {
	switch s.kind {
	case stepAppend:
		return e.Append(s.batch)
	case stepSync:
		return e.Sync(ctx, x.end())
	case stepTruncate:
		return e.Truncate(s.offset)
	case stepDeleteBefore:
		return e.DeleteBefore(s.offset)
	default:
		return errors.New("crashtest: unknown step") // unreachable
	}
}

// record updates x to what may be on disk after step s returned err. A
// step that failed, or returned after the power went out, was in flight:
// x allows both outcomes.
func (x *expect) record(s step, err error) {
	switch s.kind {
	case stepAppend:
		// Appended data is never required (it is not synced), so the batch
		// joins the expectation whether or not Append succeeded: if it failed,
		// a whole copy of it on disk is still allowed, a partial one is not.
		x.batches = append(x.batches, s.batch)
	case stepSync:
		if err == nil {
			x.acked = max(x.acked, x.end())
		}
	case stepTruncate:
		post := x.truncated(s.offset)
		if err != nil {
			// In flight: the old batches may survive, and anything from the
			// truncation point on may be lost, since it was being dropped.
			x.acked = min(x.acked, post.end())
			return
		}
		*x = post
	case stepDeleteBefore:
		if err != nil {
			x.startHi = s.offset // in flight: either start is fine
			return
		}
		x.startLo, x.startHi = s.offset, s.offset
	}
}

func engineOptions(fs vfs.FS) engine.Options {
	return engine.Options{Sync: engine.SyncAlways, SegmentBytes: segmentBytes, FS: fs}
}
