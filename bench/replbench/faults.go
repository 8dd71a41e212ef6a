package replbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

// faultTopic is the topic the tracked producer writes to through the
// kills and stops.
const faultTopic = "faults"

// Waits of the fault rounds.
const (
	quietWindow = 3 * time.Second        // the window without faults, before the first kill
	afterStop   = 2 * time.Second        // how long after an exit the stall window ends
	settle      = 500 * time.Millisecond // after the ISRs refill, before the next round
	roundWait   = time.Minute            // bounds one round
	pollEvery   = 2 * time.Millisecond
)

// faults runs the kill -9 rounds, then the SIGTERM rounds, under one
// tracked producer, and audits what it was told at the end.
func (e *engineRun) faults(ctx context.Context) {
	fail := func(err error) {
		for _, w := range []string{KillLeader, StopLeader, Audit} {
			e.add(w, failed(err))
		}
	}
	if _, err := createTopic(ctx, e.c.Seeds(), faultTopic, FaultPartitions, Replicas); err != nil {
		fail(err)
		return
	}
	client := load.Client{Brokers: e.c.Seeds()}
	t, err := load.StartTracked(ctx, load.TrackedConfig{Client: client, Topic: faultTopic, Partitions: FaultPartitions,
		Rate: e.cfg.FaultRate, RecordBytes: e.cfg.RecordBytes})
	if err != nil {
		fail(err)
		return
	}
	quietFrom := time.Now()
	bench.Pause(ctx, quietWindow)
	quiet := load.LongestGap(t.Writes(0), nil, quietFrom, time.Now())
	e.logf("tracked producer at %s records/s: longest gap without a fault %s", bench.Rate(e.cfg.FaultRate), bench.Millis(quiet.Seconds()))
	for i := range e.cfg.Kills {
		if ctx.Err() != nil {
			break
		}
		r := e.killOnce(ctx, t, i)
		e.logf("kill %d: %s", i+1, sayFault(r, "first ack from the new leader"))
		e.repairAfter(ctx, &r)
		e.add(KillLeader, r)
	}
	for i := range e.cfg.Stops {
		if ctx.Err() != nil {
			break
		}
		r := e.stopOnce(ctx, t)
		r.Quiet = quiet.Seconds()
		e.logf("stop %d: %s", i+1, sayFault(r, "longest stall"))
		e.repairAfter(ctx, &r)
		e.add(StopLeader, r)
	}
	tr := t.Stop(30 * time.Second)
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	a, err := load.Audit(actx, client, faultTopic, tr.Acked)
	r := Rep{Acked: a.Acked, Consumed: a.Consumed, Lost: a.Lost, Duplicated: a.Duplicated, Misplaced: a.Misplaced, Unacked: tr.Failed}
	if err != nil {
		r.Error = err.Error()
	}
	e.logf("audit: %d acknowledged, %d consumed, %d lost, %d duplicated, %d misplaced, %d never acknowledged", a.Acked, a.Consumed, a.Lost, a.Duplicated, a.Misplaced, tr.Failed)
	e.add(Audit, r)
}

func sayFault(r Rep, what string) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	if r.Recovery != "" {
		return fmt.Sprintf("broker %d, %s %s; then: %s", r.Node, what, bench.Millis(r.Seconds), r.Recovery)
	}
	s := fmt.Sprintf("broker %d, %s %s", r.Node, what, bench.Millis(r.Seconds))
	if r.Controller {
		s += " (it was the active controller)"
	}
	return s
}

// leaderOf waits until every broker is listed and every ISR of the fault
// topic is full (a round must not start on what the last one left), and
// returns the leader of its partition 0, and whether it is the active
// controller.
func (e *engineRun) leaderOf(ctx context.Context) (int32, bool, error) {
	if err := e.c.WaitBrokers(ctx, Replicas); err != nil {
		return 0, false, err
	}
	if err := e.c.WaitISR(ctx, faultTopic, Replicas); err != nil {
		return 0, false, err
	}
	td, err := e.c.WaitLeaders(ctx, faultTopic)
	if err != nil {
		return 0, false, err
	}
	p, ok := td.Partitions[0]
	if !ok {
		return 0, false, errors.New("no partition 0")
	}
	ctl, err := e.c.Controller(ctx)
	if err != nil {
		return 0, false, err
	}
	return p.Leader, p.Leader == ctl, nil
}

// killOnce kills the leader of partition 0 and waits for the first
// acknowledgement of that partition by another broker; then starts it
// again and waits for the ISRs to refill.
func (e *engineRun) killOnce(ctx context.Context, t *load.Tracked, round int) Rep {
	rctx, cancel := context.WithTimeout(ctx, roundWait)
	defer cancel()
	leader, ctl, err := e.leaderOf(rctx)
	if err != nil {
		return failed(err)
	}
	seen := len(t.Writes(0))
	start := time.Now()
	if err := e.c.Kill(leader); err != nil {
		return failed(err)
	}
	w, err := awaitWrite(rctx, t, seen, 0, leader, start)
	if err != nil {
		return failed(err)
	}
	r := Rep{Seconds: w.At.Sub(start).Seconds(), Node: leader, Controller: ctl, Leader: w.Node}
	if round == 0 {
		bench.Pause(rctx, time.Until(start.Add(TimelineTo)))
		r.Timeline = timeline(t.Writes(0), 0, start)
	}
	if err := e.recover(rctx, leader); err != nil {
		r.Recovery = err.Error()
	}
	return r
}

// awaitWrite polls t until a batch of partition is acknowledged by a
// broker other than not, at start or later, looking from the seen-th
// write on.
func awaitWrite(ctx context.Context, t *load.Tracked, seen int, partition, not int32, start time.Time) (load.Write, error) {
	for {
		ws := t.Writes(seen)
		for _, w := range ws {
			if w.Partition == partition && w.Node != not && !w.At.Before(start) {
				return w, nil
			}
		}
		seen += len(ws)
		if !bench.Pause(ctx, pollEvery) {
			return load.Write{}, fmt.Errorf("no acknowledgement of partition %d by another broker than %d: %w", partition, not, ctx.Err())
		}
	}
}

// repairAfter restarts every broker in turn (SIGTERM, and start again
// once fenced) when the round's fault left the cluster short of its ISRs
// or of a broker, so that the next round starts on a whole cluster; the
// round's note says so.
func (e *engineRun) repairAfter(ctx context.Context, r *Rep) {
	if r.Recovery == "" && r.Error == "" {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 3*roundWait)
	defer cancel()
	err := e.repair(rctx)
	note := "every broker was restarted in turn before the next round"
	if err != nil {
		note = "restarting every broker in turn did not help: " + err.Error()
	}
	if r.Recovery != "" {
		r.Recovery += "; " + note
	} else {
		r.Recovery = note
	}
	e.logf("  %s", note)
}

func (e *engineRun) repair(ctx context.Context) error {
	for _, n := range e.c.Nodes() {
		if n.Running() {
			if err := e.c.Stop(n.ID); err != nil {
				return err
			}
		}
		if err := e.c.WaitFenced(ctx, n.ID); err != nil {
			return err
		}
		if err := e.c.Start(ctx, n.ID); err != nil {
			return err
		}
		if err := e.c.WaitBrokers(ctx, Replicas); err != nil {
			return err
		}
	}
	return e.c.WaitISR(ctx, faultTopic, Replicas)
}

// recover waits until the last registration of id is fenced, starts it
// again, and waits for every broker and for full ISRs.
func (e *engineRun) recover(ctx context.Context, id int32) error {
	if err := e.c.WaitFenced(ctx, id); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := e.c.Start(ctx, id); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := e.c.WaitBrokers(ctx, Replicas); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := e.c.WaitISR(ctx, faultTopic, Replicas); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	bench.Pause(ctx, settle)
	return nil
}

// stopOnce sends SIGTERM to the leader of partition 0 and measures the
// longest gap between two acknowledgements of one partition from the
// signal until afterStop past its exit; then starts it again.
func (e *engineRun) stopOnce(ctx context.Context, t *load.Tracked) Rep {
	rctx, cancel := context.WithTimeout(ctx, roundWait)
	defer cancel()
	leader, ctl, err := e.leaderOf(rctx)
	if err != nil {
		return failed(err)
	}
	start := time.Now()
	if err := e.c.Stop(leader); err != nil {
		return failed(err)
	}
	exit := time.Now()
	bench.Pause(rctx, afterStop)
	end := exit.Add(afterStop)
	ws := t.Writes(0)
	r := Rep{Node: leader, Controller: ctl, Shutdown: exit.Sub(start).Seconds(), Seconds: load.LongestGap(ws, nil, start, end).Seconds()}
	if err := e.recover(rctx, leader); err != nil {
		r.Recovery = err.Error()
	}
	return r
}

// timeline counts the records of partition acknowledged per TimelineBin
// from TimelineFrom before start to TimelineTo after it.
func timeline(ws []load.Write, partition int32, start time.Time) []int {
	bins := make([]int, int((TimelineFrom+TimelineTo)/TimelineBin))
	first := start.Add(-TimelineFrom)
	for _, w := range ws {
		if w.Partition != partition || w.At.Before(first) {
			continue
		}
		if i := int(w.At.Sub(first) / TimelineBin); i < len(bins) {
			bins[i] += w.Records
		}
	}
	return bins
}
