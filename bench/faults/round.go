package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// Round is one injection and heal of a cell's fault. Durations are in
// seconds; -1 is "never within the bound".
type Round struct {
	// Victims are the brokers the fault hit; Controller whether one of
	// them was the active controller.
	Victims    string `json:"victims"`
	Controller bool   `json:"controller,omitempty"`
	// FirstAck is from the fault to the first acknowledgement of a
	// partition it hit: by another broker than the victim for a fault of
	// a leader (the new leader's), by anyone otherwise.
	FirstAck float64 `json:"first_ack_s"`
	// LongestGap is the longest time between two acknowledgements of one
	// partition the fault hit, from the fault to the end of the round.
	LongestGap float64 `json:"longest_gap_s"`
	// FullISR is from the heal to every ISR full again; Progress from the
	// heal to an acknowledgement of every partition.
	FullISR  float64 `json:"full_isr_s"`
	Progress float64 `json:"progress_s"`
	// CutOffAcks counts the acknowledgements a cut-off leader gave after
	// it was cut off, the last CutOffLast after the cut (every one of them
	// must be in the log at the end: lost-write says otherwise).
	CutOffAcks int     `json:"cut_off_acks,omitempty"`
	CutOffLast float64 `json:"cut_off_last_s,omitempty"`
	Note       string  `json:"note,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// target is what a round's fault hits.
type target struct {
	victims  []int32
	affected map[int32]bool // the partitions it hits
	leader   bool           // the victims led them: the first ack must come from another broker
}

// round injects the fault, waits out its hold, heals it, and measures.
func (e *cell) round(ctx context.Context) Round {
	rctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	var r Round
	if note, err := e.supervise(rctx); err != nil {
		return Round{Error: err.Error()}
	} else if note != "" {
		r.Note = note + " before the round"
	}
	if err := e.c.WaitBrokers(rctx, Brokers); err != nil {
		return Round{Error: err.Error()}
	}
	if err := e.c.WaitISR(rctx, Topic, Brokers); err != nil {
		return Round{Error: err.Error()}
	}
	tg, err := e.kind.target(rctx, e)
	if err != nil {
		return Round{Error: err.Error()}
	}
	r.Victims = ids(tg.victims)
	if ctl, err := e.c.Controller(rctx); err == nil {
		r.Controller = slices.Contains(tg.victims, ctl)
	}
	seen := len(e.tracked.Writes(0))
	injected := time.Now()
	if err := e.kind.inject(rctx, e, tg); err != nil {
		r.Error = fmt.Sprintf("inject: %v", err)
		return r
	}
	bench.Pause(rctx, e.kind.hold(e.cfg))
	healed := time.Now()
	note, err := e.kind.heal(rctx, e, tg)
	r.Note = strings.TrimPrefix(r.Note+"; "+note, "; ")
	r.Note = strings.TrimSuffix(r.Note, "; ")
	if err != nil {
		r.Error = fmt.Sprintf("heal: %v", err)
		return r
	}
	r.Progress = e.awaitProgress(rctx, seen, healed)
	ictx, icancel := context.WithTimeout(rctx, isrBound)
	err = e.c.WaitISR(ictx, Topic, Brokers)
	icancel()
	if err != nil {
		r.FullISR = -1
		r.Note = strings.TrimPrefix(r.Note+"; every ISR not full within "+isrBound.String(), "; ")
	} else {
		r.FullISR = time.Since(healed).Seconds()
	}
	bench.Pause(rctx, settle)
	ws := e.tracked.Writes(seen)
	r.FirstAck = firstAck(ws, tg, injected)
	r.LongestGap = load.LongestGap(append(e.tracked.Writes(0)[:seen:seen], ws...), tg.affected, injected, time.Now()).Seconds()
	if e.kind.cutsLeader {
		r.CutOffAcks, r.CutOffLast = cutOffAcks(ws, tg, injected, healed)
	}
	return r
}

// awaitProgress is the time from healed until every partition has an
// acknowledgement after it, or -1 past the progress bound (and twice it,
// so that a late recovery still shows).
func (e *cell) awaitProgress(ctx context.Context, seen int, healed time.Time) float64 {
	deadline := healed.Add(2 * e.cfg.ProgressBound)
	acked := map[int32]time.Time{}
	for {
		ws := e.tracked.Writes(seen)
		seen += len(ws)
		for _, w := range ws {
			if _, ok := acked[w.Partition]; !ok && !w.At.Before(healed) {
				acked[w.Partition] = w.At
			}
		}
		if len(acked) == Partitions {
			var last time.Time
			for _, at := range acked {
				if at.After(last) {
					last = at
				}
			}
			return last.Sub(healed).Seconds()
		}
		if time.Now().After(deadline) || !bench.Pause(ctx, pollEvery) {
			return -1
		}
	}
}

// firstAck is the time from injected to the first acknowledgement of an
// affected partition (by a broker other than a victim when the victims
// led), or -1.
func firstAck(ws []load.Write, tg target, injected time.Time) float64 {
	for _, w := range ws {
		if w.At.Before(injected) || !tg.affected[w.Partition] || (tg.leader && slices.Contains(tg.victims, w.Node)) {
			continue
		}
		return w.At.Sub(injected).Seconds()
	}
	return -1
}

// cutOffAcks counts the acknowledgements of affected partitions by a
// victim between injected and healed, and when the last was.
func cutOffAcks(ws []load.Write, tg target, injected, healed time.Time) (int, float64) {
	n, last := 0, 0.0
	for _, w := range ws {
		if w.At.Before(injected) || w.At.After(healed) || !tg.affected[w.Partition] || !slices.Contains(tg.victims, w.Node) {
			continue
		}
		n++
		last = w.At.Sub(injected).Seconds()
	}
	return n, last
}

func ids(v []int32) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func (r Round) say() string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	s := fmt.Sprintf("broker %s", r.Victims)
	if r.Controller {
		s += " (the controller)"
	}
	s += fmt.Sprintf(": first ack %s, longest gap %s, full ISR %s after the heal, progress %s",
		secs(r.FirstAck), secs(r.LongestGap), secs(r.FullISR), secs(r.Progress))
	if r.CutOffAcks > 0 {
		s += fmt.Sprintf(", %d acks by the cut-off leader (last %s after the cut)", r.CutOffAcks, secs(r.CutOffLast))
	}
	if r.Note != "" {
		s += "; " + r.Note
	}
	return s
}

func secs(s float64) string {
	if s < 0 {
		return "never"
	}
	return bench.Millis(s)
}

// supervise starts again, as a supervisor (systemd, Kubernetes) would, a
// broker of a disk cell that exited on its full disk after the heal had
// found it running; other cells never do, so that a broker that dies
// unasked shows as a failed round.
func (e *cell) supervise(ctx context.Context) (string, error) {
	if !e.kind.disk {
		return "", nil
	}
	var notes []string
	for _, n := range e.c.Nodes() {
		if n.Child() == nil || n.Running() {
			continue
		}
		if _, err := restart(ctx, e, target{victims: []int32{n.ID}}); err != nil {
			return "", err
		}
		notes = append(notes, fmt.Sprintf("broker %d had exited on the full disk after the last heal and was started again", n.ID))
	}
	return strings.Join(notes, "; "), nil
}
