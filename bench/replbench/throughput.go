package replbench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/broker/harness"
)

// throughput alternates closed-loop produce runs on one broker at RF 1
// and on the cluster at RF 3, each on a fresh topic deleted afterwards,
// then measures the latency at half the peak.
func (e *engineRun) throughput(ctx context.Context) {
	single, err := harness.Broker(e.cfg.Bin, e.engine, e.cfg.Partitions, e.cfg.Args, e.cfg.ServerLog)(ctx, e.singleDir(), e.cfg.Sync)
	if err != nil {
		e.add(ProduceRF1, failed(fmt.Errorf("start the single broker: %w", err)))
	} else {
		defer single.Stop()
	}
	for i := range e.cfg.Reps {
		if ctx.Err() != nil {
			return
		}
		if single != nil {
			r := e.measuredRun(ctx, []*harness.Child{single.Child}, []string{single.Addr()}, []string{e.singleDir()}, fmt.Sprintf("rf1-%d", i), 1)
			e.logf("RF 1 run %d: %s", i+1, sayRun(r))
			e.add(ProduceRF1, r)
		}
		r := e.measuredRun(ctx, e.brokers(), e.c.Seeds(), e.c.Dirs(), fmt.Sprintf("rf3-%d", i), Replicas)
		e.logf("RF 3 run %d: %s", i+1, sayRun(r))
		e.add(ProduceRF3, r)
	}
	// The same broker serves the RF 1 latency run (it is stopped when
	// throughput returns).
	addr := ""
	if single != nil {
		addr = single.Addr()
	}
	e.latency(ctx, addr)
}

// LowerRateDivisors are the fractions of the RF 3 peak, besides half, that
// the latency is measured at.
var LowerRateDivisors = []int{4, 8}

// latency produces in open loop at half the cluster's median peak rate
// and at the lower rates on the cluster, then at half the peak, for
// reference, on the single broker (when addr is not empty).
func (e *engineRun) latency(ctx context.Context, single string) {
	peak := e.res.Cell(e.engine, ProduceRF3).Median(RecordsPerSec)
	if !(peak > 0) {
		e.add(LatencyRF3, failed(errors.New("no RF 3 peak rate to halve")))
		return
	}
	r := e.produceRun(ctx, e.c.Seeds(), e.c.Dirs(), "half-rf3", Replicas, peak/2)
	e.logf("RF 3 at %s records/s: %s", bench.Rate(peak/2), sayRun(r))
	e.add(LatencyRF3, r)
	for _, d := range LowerRateDivisors {
		r := e.produceRun(ctx, e.c.Seeds(), e.c.Dirs(), fmt.Sprintf("rf3-1-%d", d), Replicas, peak/float64(d))
		e.logf("RF 3 at %s records/s (1/%d of the peak): %s", bench.Rate(peak/float64(d)), d, sayRun(r))
		e.add(LatencyLower, r)
	}
	if single != "" {
		r := e.produceRun(ctx, []string{single}, []string{e.singleDir()}, "half-rf1", 1, peak/2)
		e.logf("RF 1 at %s records/s: %s", bench.Rate(peak/2), sayRun(r))
		e.add(LatencyRF1, r)
	}
}

func sayRun(r Rep) string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	out := fmt.Sprintf("%s records/s, %s MB/s, ack p50 %s, p99 %s", bench.Rate(r.RecordsPerSec), bench.MB(r.BytesPerSec),
		bench.Millis(r.P50), bench.Millis(r.P99))
	if r.CPUSeconds > 0 { // a measuredRun
		out += fmt.Sprintf("; %.2f device flushes per batch, %.1f µs of broker CPU per record", FlushesPerBatch(r), CPUPerRecord(r)*1e6)
	}
	return out
}

// brokers are the cluster's broker processes.
func (e *engineRun) brokers() []*harness.Child {
	var out []*harness.Child
	for _, n := range e.c.Running() {
		out = append(out, n.Child())
	}
	return out
}

// measuredRun is a closed-loop produceRun that also counts what the
// brokers spent on it: the CPU of their processes and the flush requests
// of the data directory's block device over the produce (the topic's
// creation and deletion left out).
func (e *engineRun) measuredRun(ctx context.Context, brokers []*harness.Child, seeds, dirs []string, topic string, rf int16) Rep {
	disk, uerr := bench.DiskFor(e.dir)
	var before, spent usage
	r := e.produceRun(ctx, seeds, dirs, topic, rf, 0, func(begin bool) {
		if uerr != nil {
			return
		}
		u, err := usageOf(brokers, disk)
		switch {
		case err != nil:
			uerr = err
		case begin:
			before = u
		default:
			spent = u.sub(before)
		}
	})
	if r.Error != "" {
		return r
	}
	if uerr != nil {
		e.logf("no CPU or flush counts for %s: %v", topic, uerr)
		return r
	}
	r.CPUSeconds, r.Flushes = spent.cpu, spent.flushes
	return r
}

// usage is what the brokers had spent at a moment.
type usage struct {
	cpu     float64 // seconds, user and system, every broker
	flushes int64   // flush requests the device completed
}

func (u usage) sub(o usage) usage { return usage{cpu: u.cpu - o.cpu, flushes: u.flushes - o.flushes} }

func usageOf(brokers []*harness.Child, disk *bench.Disk) (usage, error) {
	var u usage
	for _, b := range brokers {
		c, err := harness.CPU(b.Pid())
		if err != nil {
			return usage{}, err
		}
		u.cpu += c
	}
	st, err := disk.Stats()
	if err != nil {
		return usage{}, err
	}
	u.flushes = st.FlushOps
	return u, nil
}

func (e *engineRun) singleDir() string { return filepath.Join(e.dir, "single") }

// produceRun creates topic with rf replicas on seeds, produces to it for
// Run with acks=all and idempotence (closed loop, or open loop at rate),
// deletes it, and waits until the brokers on dirs have deleted its files:
// the next run must not share the disk with this one's cleanup.
func (e *engineRun) produceRun(ctx context.Context, seeds, dirs []string, topic string, rf int16, rate float64, around ...func(begin bool)) Rep {
	client := load.Client{Brokers: seeds}
	id, err := createTopic(ctx, seeds, topic, e.cfg.Partitions, rf)
	if err != nil {
		return failed(err)
	}
	defer func() {
		deleteTopic(ctx, seeds, topic)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := harness.WaitDeleted(wctx, id, dirs...); err != nil {
			e.logf("%v", err)
		}
	}()
	pc := load.ProduceConfig{Client: client, Topic: topic, Duration: e.cfg.Run, RecordBytes: e.cfg.RecordBytes,
		Acks: "all", Idempotent: true, InFlight: load.DefaultInFlight, Rate: rate, Seed: uint64(len(topic))}
	if rate > 0 {
		pc.Linger, pc.Warmup = LatencyLinger, LatencyWarmup
	}
	for _, f := range around {
		f(true)
	}
	p, err := load.Produce(ctx, pc)
	for _, f := range around {
		f(false)
	}
	if err != nil {
		return failed(err)
	}
	r := Rep{Records: p.Records, Batches: p.Batches, RecordsPerSec: p.RecordsPerSec, BytesPerSec: p.MBPerSec * 1e6, Rate: rate, Errors: p.Errors,
		P50: p.Latency.P50.Seconds(), P99: p.Latency.P99.Seconds(), P999: p.Latency.P999.Seconds(), Max: p.Latency.Max.Seconds(),
		Behind: p.Behind.Seconds()}
	if p.Errors > 0 {
		r.Error = fmt.Sprintf("%d records failed: %s", p.Errors, p.FirstError)
	}
	return r
}

// createTopic creates topic, waits until every partition has a leader
// and rf replicas in sync, and returns its id.
func createTopic(ctx context.Context, seeds []string, topic string, partitions int32, rf int16) (uuid.UUID, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return uuid.UUID{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return uuid.UUID{}, fmt.Errorf("create %s: %w", topic, err)
	}
	for {
		m, err := adm.Metadata(cctx, topic)
		if td := m.Topics[topic]; err == nil && ready(td, rf) {
			return uuid.UUID(td.ID), nil
		}
		if !bench.Pause(cctx, 20*time.Millisecond) {
			return uuid.UUID{}, fmt.Errorf("%s: no leader and %d replicas in sync for every partition: %w", topic, rf, cctx.Err())
		}
	}
}

func ready(td kadm.TopicDetail, rf int16) bool {
	if td.Err != nil || len(td.Partitions) == 0 {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < int(rf) {
			return false
		}
	}
	return true
}

// deleteTopic deletes topic, best effort: it only frees the disk.
func deleteTopic(ctx context.Context, seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = kadm.NewClient(cl).DeleteTopics(dctx, topic)
}
