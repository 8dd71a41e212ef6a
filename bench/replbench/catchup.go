package replbench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
)

const catchUpTopic = "catch-up"

// catchUpWait bounds the wait for the follower to rejoin every ISR.
const catchUpWait = 15 * time.Minute

// catchUp stops a follower (a broker other than the controller) with
// SIGTERM, produces CatchUpBytes at acks=1 to a fresh topic of RF 3
// (acks=1: the backlog is written as fast as the leaders take it, and
// min.insync.replicas does not apply), starts the follower again and
// times it from the exec until it is back in the ISR of every partition.
func (e *engineRun) catchUp(ctx context.Context) {
	r := e.catchUpOnce(ctx)
	e.logf("catch-up: %s", sayCatchUp(r))
	e.add(CatchUp, r)
}

func sayCatchUp(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	return fmt.Sprintf("broker %d, %s behind, back in every ISR in %s: %s MB/s", r.Node, bench.Bytes(r.Bytes), bench.Millis(r.Seconds),
		bench.MB(CatchUpRate(r)))
}

func (e *engineRun) catchUpOnce(ctx context.Context) Rep {
	c := e.c
	if _, err := createTopic(ctx, c.Seeds(), catchUpTopic, e.cfg.Partitions, Replicas); err != nil {
		return failed(err)
	}
	sctx, cancel := context.WithTimeout(ctx, roundWait)
	defer cancel()
	ctl, err := c.Controller(sctx)
	if err != nil {
		return failed(err)
	}
	follower := c.Others(ctl)[0]
	if err := c.Stop(follower); err != nil {
		return failed(err)
	}
	if err := c.WaitFenced(sctx, follower); err != nil {
		return failed(err)
	}
	if err := c.WaitISR(sctx, catchUpTopic, Replicas-1); err != nil {
		return failed(err)
	}
	records := e.cfg.CatchUpBytes / int64(e.cfg.RecordBytes)
	p, err := load.Produce(ctx, load.ProduceConfig{Client: load.Client{Brokers: c.Seeds()}, Topic: catchUpTopic, Records: records,
		RecordBytes: e.cfg.RecordBytes, Acks: "1", InFlight: load.DefaultInFlight, Seed: 7})
	if err == nil && p.Errors > 0 {
		err = fmt.Errorf("%d of %d records failed: %s", p.Errors, records, p.FirstError)
	}
	if err != nil {
		return failed(fmt.Errorf("backlog: %w", err))
	}
	e.logf("backlog: %s in %s (%s MB/s, acks=1) while broker %d is down", bench.Bytes(p.Bytes), bench.Millis(p.Elapsed), bench.MB(p.MBPerSec*1e6), follower)
	r := Rep{Node: follower, Bytes: p.Bytes}
	wctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	start := time.Now()
	if err := c.Start(wctx, follower); err != nil {
		return failed(err)
	}
	var wg sync.WaitGroup
	var listErr, isrErr error
	wg.Go(func() {
		listErr = c.WaitBrokers(wctx, Replicas)
		r.Listed = time.Since(start).Seconds()
	})
	wg.Go(func() {
		isrErr = c.WaitISR(wctx, catchUpTopic, Replicas)
		r.Seconds = time.Since(start).Seconds()
	})
	wg.Wait()
	switch {
	case isrErr != nil:
		r.Error = isrErr.Error()
	case listErr != nil:
		r.Error = listErr.Error()
	}
	deleteTopic(ctx, c.Seeds(), catchUpTopic)
	return r
}
