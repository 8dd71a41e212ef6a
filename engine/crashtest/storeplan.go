package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// The store workload of the power-loss sweep: one goroutine, as plan's,
// over several logs of one store, which it creates, appends to, syncs,
// truncates, trims, closes and deletes, interleaved.

// storeStepKind is one call the store workload makes.
type storeStepKind int

const (
	sCreate storeStepKind = iota
	sAppend
	sSync
	sTruncate
	sDeleteBefore
	sDelete // Close, then Delete
)

type storeStep struct {
	kind   storeStepKind
	log    int          // which of the workload's logs
	batch  engine.Batch // sAppend
	offset int64        // sTruncate, sDeleteBefore
}

func (s storeStep) String() string {
	switch s.kind {
	case sCreate:
		return fmt.Sprintf("Create (log %d)", s.log)
	case sAppend:
		return fmt.Sprintf("log %d: Append %s", s.log, describe(s.batch))
	case sSync:
		return fmt.Sprintf("log %d: Sync", s.log)
	case sTruncate:
		return fmt.Sprintf("log %d: Truncate(%d)", s.log, s.offset)
	case sDeleteBefore:
		return fmt.Sprintf("log %d: DeleteBefore(%d)", s.log, s.offset)
	default:
		return fmt.Sprintf("log %d: Close and Delete", s.log)
	}
}

// storePlan is the store workload: storeLogs logs, three made at the
// start, one more half way; log 0 is deleted three fifths of the way
// through, log 1 truncated at two fifths, log 2 trimmed at seven tenths.
type storePlan struct {
	steps []storeStep
}

const storeLogs = 4

// makeStorePlan draws a store workload of about appends appends from rng.
func makeStorePlan(rng *rand.Rand, appends int) storePlan {
	var p storePlan
	logs := make([][]engine.Batch, storeLogs) // the expected logs, to pick offsets from
	starts := make([]int64, storeLogs)
	live := []int{0, 1, 2}
	end := func(n int) int64 {
		if l := logs[n]; len(l) > 0 {
			return l[len(l)-1].NextOffset()
		}
		return starts[n]
	}
	for _, n := range live {
		p.steps = append(p.steps, storeStep{kind: sCreate, log: n})
	}
	for i := range appends {
		switch i {
		case appends * 2 / 5:
			off := max(end(1)-1-rng.Int64N(max(min(end(1)-starts[1], 40), 1)), starts[1])
			p.steps = append(p.steps, storeStep{kind: sTruncate, log: 1, offset: off})
			for len(logs[1]) > 0 && logs[1][len(logs[1])-1].NextOffset() > off {
				logs[1] = logs[1][:len(logs[1])-1]
			}
		case appends / 2:
			p.steps = append(p.steps, storeStep{kind: sCreate, log: 3})
			live = append(live, 3)
		case appends * 3 / 5:
			p.steps = append(p.steps, storeStep{kind: sDelete, log: 0})
			live = live[1:]
		case appends * 7 / 10:
			off := starts[2] + 1 + rng.Int64N(max((end(2)-starts[2])/2, 1))
			p.steps = append(p.steps, storeStep{kind: sSync, log: 2}, storeStep{kind: sDeleteBefore, log: 2, offset: off})
			starts[2] = off
			for len(logs[2]) > 0 && logs[2][0].NextOffset() <= off {
				logs[2] = logs[2][1:]
			}
		}
		n := live[rng.IntN(len(live))]
		size := 12 + rng.IntN(1200)
		if rng.IntN(10) == 0 {
			size = segmentBytes + rng.IntN(segmentBytes/2)
		}
		// Each log's batches have sizes of their own (mod storeLogs), so
		// that a log that reads another's keys reads different bytes.
		size += (n - size%storeLogs + storeLogs) % storeLogs
		b := enginetest.Batch(end(n), int32(1+rng.IntN(16)), size)
		logs[n] = append(logs[n], b)
		p.steps = append(p.steps, storeStep{kind: sAppend, log: n, batch: b})
		if rng.IntN(3) == 0 {
			p.steps = append(p.steps, storeStep{kind: sSync, log: live[rng.IntN(len(live))]})
		}
	}
	return p
}

// logFate is where a log of the workload stands.
type logFate int

const (
	fateNone     logFate = iota // not created yet
	fateCreating                // Create was in flight at the crash
	fateLive                    // Create returned: it must exist
	fateDeleting                // its Delete was in flight at the crash: it may exist
	fateDeleted                 // Delete returned: it must not exist
)

// storeLog is what the workload knows of one of its logs.
type storeLog struct {
	fate logFate
	id   engine.LogID
	e    engine.LogEngine // open, while live
	x    expect           // what it may hold if it exists
}

// storeOutcome is what running a store plan left.
type storeOutcome struct {
	logs     [storeLogs]storeLog
	stopped  string
	finished bool
}

// executeStore opens the store on fs, runs the plan, closes every log and
// the store, recording in o as it goes; it stops at the first call that
// fails or returns after the crash (that call was in flight). shared says
// a Sync of one log acknowledges the appends made to every log before it
// (Capabilities.SharedCommit).
func executeStore(ctx context.Context, d engine.Driver, fs *crashFS, p storePlan, o *storeOutcome) {
	s, err := d.OpenStoreIn(logDir, engineOptions(fs))
	switch {
	case err != nil:
		o.stopped = fmt.Sprintf("OpenStore: %v", err)
		return
	case fs.lost():
		o.stopped = "OpenStore: " + errLostDuring.Error()
		_ = s.Close()
		return
	}
	defer func() {
		if !o.finished {
			_ = s.Close() // errors expected: the disk is gone
		}
	}()
	for _, st := range p.steps {
		if err := applyStore(ctx, s, st, o, fs.lost, d.Caps.SharedCommit); err != nil {
			o.stopped = fmt.Sprintf("%v: %v", st, err)
			return
		}
	}
	for n := range o.logs {
		l := &o.logs[n]
		if l.fate != fateLive || l.e == nil {
			continue
		}
		if err := l.e.Close(); err != nil || fs.lost() {
			o.stopped = fmt.Sprintf("log %d: Close: %v", n, orLost(err))
			return
		}
		l.x.acked, l.e = l.x.end(), nil // Close syncs what was appended
	}
	if err := s.Close(); err != nil || fs.lost() {
		o.stopped = fmt.Sprintf("store Close: %v", orLost(err))
		return
	}
	o.finished = true
}

func orLost(err error) error {
	if err == nil {
		return errLostDuring
	}
	return err
}

// applyStore runs one step of the store plan and updates o to what may be
// on disk afterwards; see apply for the single-log rules it follows.
func applyStore(ctx context.Context, s engine.Store, st storeStep, o *storeOutcome, lost func() bool, shared bool) error {
	if lost() {
		return errPowerLost
	}
	l := &o.logs[st.log]
	switch st.kind {
	case sCreate:
		l.fate, l.x = fateCreating, expect{strict: true}
		id, e, err := s.Create(engine.LogOptions{})
		if err == nil && lost() {
			_ = e.Close()
			err = errLostDuring
		}
		if err != nil {
			return err
		}
		l.fate, l.id, l.e = fateLive, id, e
	case sSync:
		// Every log's end now: with a shared commit the Sync covers them.
		var ends [storeLogs]int64
		for n := range o.logs {
			ends[n] = o.logs[n].x.end()
		}
		if err := apply(ctx, l.e, step{kind: stepSync}, &l.x, lost); err != nil || !shared {
			return err
		}
		for n := range o.logs {
			if o.logs[n].fate == fateLive {
				o.logs[n].x.acked = max(o.logs[n].x.acked, ends[n])
			}
		}
	case sDelete:
		err := l.e.Close()
		if err == nil && lost() {
			err = errLostDuring
		}
		if err != nil {
			return err
		}
		l.x.acked, l.e = l.x.end(), nil
		l.fate = fateDeleting
		if err := s.Delete(l.id); err != nil {
			return err
		}
		if lost() {
			return errLostDuring
		}
		l.fate = fateDeleted
	default:
		kinds := map[storeStepKind]stepKind{sAppend: stepAppend, sTruncate: stepTruncate, sDeleteBefore: stepDeleteBefore}
		return apply(ctx, l.e, step{kind: kinds[st.kind], batch: st.batch, offset: st.offset}, &l.x, lost)
	}
	return nil
}
