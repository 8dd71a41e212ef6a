package crashtest

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/minikafka/minikafka/engine"
)

// This file is the PowerLoss model for crash layers that live outside this
// package: an engine that cannot take a custom filesystem (badger) runs the
// same workload on a filesystem that drops unsynced writes underneath the
// process (engine/powerfs), and its recovery is judged by the same rules.
// The caller runs the steps, reports how each returned, cuts the power
// wherever it likes, reopens the log and calls Check.

// Workload is the PowerLoss workload of a seed: the same steps, batches and
// offsets the PowerLoss subtest runs (-crash.long makes it bigger).
type Workload struct {
	p plan
}

// NewWorkload is the PowerLoss workload drawn from seed.
func NewWorkload(seed uint64) Workload {
	return Workload{p: makePlan(rand.New(rand.NewPCG(seed, 0x706c616e)), workloadSize())}
}

// Steps is how many steps the workload has (Open and Close not counted).
func (w Workload) Steps() int { return len(w.p.steps) }

// Step describes step i, for failure messages.
func (w Workload) Step(i int) string { return w.p.steps[i].String() }

// Options are the engine options the workload runs under: SyncAlways and a
// small segment size.
func (w Workload) Options() engine.Options { return engineOptions(nil) }

// Run makes step i's call on e. x must have seen every earlier step
// (Returned), since a Sync asks for everything appended before it.
func (w Workload) Run(ctx context.Context, e engine.LogEngine, x *Expectation, i int) error {
	return w.p.steps[i].run(ctx, e, &x.x)
}

// ErrInFlight is what to report (Returned) for the step that had not
// returned when the power went out: it may have taken effect or not.
var ErrInFlight = errors.New("crashtest: in flight when the power went out")

// Expectation is what a recovered log may hold, built from the steps of a
// Workload that returned before the power went out. A step counts as
// acknowledged only if it returned nil; report the power loss as ErrInFlight
// for the step that was running, and nothing for the steps never started.
type Expectation struct {
	x expect
}

// NewExpectation is the expectation of a log that was created empty (or
// not created at all: an Open in flight leaves no log, or an empty one).
func NewExpectation() *Expectation { return &Expectation{x: expect{strict: true}} }

// Returned records that step i of w returned err.
func (x *Expectation) Returned(w Workload, i int, err error) {
	x.x.record(w.p.steps[i], err)
}

// Closed records that Close returned nil after the last step: Close syncs
// what was appended.
func (x *Expectation) Closed() { x.x.acked = x.x.end() }

// Acked is the offset below which every batch was acknowledged.
func (x *Expectation) Acked() int64 { return x.x.acked }

// Check reads the whole recovered log e and reports every way it breaks
// the PowerLoss properties against x (an acknowledged batch missing or not
// byte for byte what was written, a gap, ErrCorrupt, a truncated batch back,
// a start that does not honour DeleteBefore), then appends, syncs and reads
// back one more batch at EndOffset. No problems: a nil slice. It does not
// close e.
func Check(e engine.LogEngine, x *Expectation) []string {
	r, bad := readLog(e)
	bad = append(bad, compare(r, x.x)...)
	_, more := resume(context.Background(), e, 2, 100)
	return append(bad, more...)
}
