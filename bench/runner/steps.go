package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/bench/load"
	"github.com/minikafka/minikafka/bench/logbench"
	"github.com/minikafka/minikafka/bench/result"
	"github.com/minikafka/minikafka/bench/workloads"
	"github.com/minikafka/minikafka/broker/harness"
	"github.com/minikafka/minikafka/broker/harness/netlab"
)

// steps runs the steps of one server start (or cluster start), round
// after round, and collects their figures.
type steps struct {
	cfg *Config
	// res is the run so far, which a rate_of reads.
	res      *result.Result
	topology workloads.Topology
	d        load.Driver
	srv      string
	// dir is the server's data directory; server and cluster what runs
	// there, one of them.
	dir     string
	server  *harness.Server
	cluster *harness.Cluster
	seeds   []string
	// figures are the current round's.
	figures map[string]float64
	round   int
	// produced counts the records acknowledged so far: what a consume
	// step reads; aborted those of them in aborted transactions, which a
	// read_committed one skips.
	produced, aborted int64
	// txn is the producer of begin_txn and end_txn, made at its first use;
	// txnOpen the records of its open transaction.
	txn     *load.TxnProducer
	txnOpen int64
	// seq numbers the topics create_topic names; topics are the ones the
	// setup and the current round created.
	seq    int
	topics []string
	// The last fault: its node (0 when restarted since), what the node
	// led and when it came; every node it hit, how (until a heal), the
	// partitions of the load topic it hit and whether the nodes led them
	// (the first acknowledgement after it must come from another);
	// when the heal came.
	victim      int32
	victimLed   []partition
	faultAt     time.Time
	victims     []int32
	how         string
	affected    map[int32]bool
	leaderFault bool
	healedAt    time.Time
	// lab and disks are the hosts and filesystems of a cluster whose
	// topology asks for them (faults.go).
	lab   *netlab.Lab
	disks []string
	// faultBytes are the bytes produced since the last fault: what a node
	// restarted after it has to catch up with.
	faultBytes int64
	// acksAll and acksOne are the cluster clients of served topics.
	acksAll, acksOne *kgo.Client
	// The loads running beside the round's steps, and one copy of their
	// topic's size on disk at the last step's end and its growth then.
	pump       *load.Pump
	tracked    *load.Tracked
	reader     *load.Reader
	groups     *load.GroupLoad
	stored     int64
	storedRate float64
}

func (st *steps) close() {
	if st.pump != nil {
		st.pump.Stop()
	}
	if st.tracked != nil {
		st.tracked.Stop(0)
	}
	if st.reader != nil {
		st.reader.Stop()
	}
	if st.groups != nil {
		st.groups.Stop()
	}
	if st.acksAll != nil {
		st.acksAll.Close()
		st.acksOne.Close()
	}
	if st.txn != nil {
		st.txn.Close()
	}
}

// run runs one step, timing it.
func (st *steps) run(ctx context.Context, s workloads.Step) error {
	start, faultAt, healedAt, requests := time.Now(), st.faultAt, st.healedAt, st.groupRequests()
	prefix := s.Prefix()
	var err error
	switch {
	case s.Produce != nil:
		err = st.produce(ctx, prefix, s.Produce)
	case s.Consume != nil:
		err = st.consume(ctx, prefix, s.Consume)
	case s.CreateTopic != nil:
		err = st.createTopic(ctx, prefix, s.CreateTopic)
	case s.Kill != nil, s.Stop != nil, s.Freeze != nil, s.Isolate != nil, s.Cut != nil, s.FillDisk != nil:
		err = st.fault(ctx, prefix, cmp.Or(s.Kill, s.Stop, s.Freeze, s.Isolate, s.Cut, s.FillDisk), s.Kind())
	case s.Heal != nil:
		err = st.heal(ctx, prefix)
	case s.RollingRestart != nil:
		err = st.rollingRestart(ctx, s.RollingRestart)
	case s.Restart != nil:
		err = st.restart(ctx, prefix, s.Restart)
	case s.Wait != nil:
		err = st.wait(ctx, prefix, s.Wait)
	case s.Load != nil:
		err = st.startPump(ctx, s.Load)
	case s.Track != nil:
		err = st.startTracked(ctx, s.Track)
	case s.Fill != nil:
		err = st.fill(ctx, s.Fill)
	case s.Pause > 0:
		err = pause(ctx, s.Pause)
	case s.Reassign != nil:
		err = st.reassign(ctx, prefix, s.Reassign)
	case s.Churn != nil:
		err = st.churn(ctx, prefix, s.Churn)
	case s.Settle != nil:
		err = st.settle(ctx, prefix, s.Settle)
	case s.Groups != nil:
		err = st.startGroups(ctx, s.Groups)
	case s.Ingest != nil:
		err = st.ingest(prefix, s.Ingest)
	case s.BeginTxn != nil:
		err = st.beginTxn(ctx, prefix, s.BeginTxn)
	case s.EndTxn != nil:
		err = st.endTxn(ctx, s.EndTxn)
	default:
		err = fmt.Errorf("step of no kind")
	}
	if err != nil {
		return err
	}
	figs, err := st.loadFigures(ctx, start, requests)
	if err != nil {
		return err
	}
	figs["s"] = since(start)
	if !faultAt.IsZero() && s.Restart == nil {
		figs["since_fault_s"] = since(faultAt)
	}
	if !healedAt.IsZero() {
		figs["since_heal_s"] = since(healedAt)
	}
	st.set(prefix, figs)
	return nil
}

func (st *steps) set(prefix string, figures map[string]float64) {
	for k, v := range figures {
		st.figures[prefix+"."+k] = v
	}
}

func (st *steps) produce(ctx context.Context, prefix string, p *workloads.Produce) error {
	rate := p.Rate
	if o := p.RateOf; o != nil {
		if rate = st.res.Cell(o.Cell, st.srv).Stat(o.Figure, "") * o.Times; !(rate > 0) {
			return fmt.Errorf("no %s of %s on %s to take the rate from", o.Figure, o.Cell, st.srv)
		}
	}
	var txn *load.Txn
	if t := p.Transaction; t != nil {
		txn = &load.Txn{Records: t.Records, AbortEvery: t.AbortEvery, ID: fmt.Sprintf("bench-%s-%d", prefix, st.round)}
	}
	before, spentErr := st.spent()
	progress, finish := st.cfg.Bar(st.srv+" "+prefix, p.Records)
	r, err := st.d.Produce(ctx, load.ProduceConfig{
		Topic: st.loadTopic(), Records: p.Records, Duration: p.Duration, RecordBytes: p.RecordBytes,
		Acks: p.Acks, Idempotent: p.Idempotent, InFlight: p.InFlight, Rate: rate, Clients: p.Clients,
		Linger: p.Linger, Warmup: p.Warmup, MetadataMinAge: p.MetadataMinAge, Progress: progress, Txn: txn,
	})
	finish()
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d records failed: %s", r.Errors, r.Records+r.Errors, r.FirstError)
	}
	if err != nil {
		return err
	}
	st.produced += r.Records + r.Txns.AbortedRecords
	st.aborted += r.Txns.AbortedRecords
	if !st.faultAt.IsZero() {
		st.faultBytes += r.Bytes
	}
	figs := map[string]float64{
		"records": float64(r.Records), "batches": float64(r.Batches), "bytes": float64(r.Bytes),
		"records_per_s": r.RecordsPerSec, "mb_per_s": r.MBPerSec, "behind_s": r.Behind.Seconds(),
		"ack_p50_s": r.Latency.P50.Seconds(), "ack_p99_s": r.Latency.P99.Seconds(), "ack_p999_s": r.Latency.P999.Seconds(),
		"ack_max_s": r.Latency.Max.Seconds(),
	}
	if rate > 0 {
		figs["rate_per_s"] = rate
	}
	if txn != nil {
		t := r.Txns
		maps.Copy(figs, map[string]float64{"txns": float64(t.Committed), "aborted_txns": float64(t.Aborted),
			"aborted_records": float64(t.AbortedRecords), "txn_p50_s": t.Latency.P50.Seconds(),
			"txn_p99_s": t.Latency.P99.Seconds(), "end_p50_s": t.End.P50.Seconds(), "end_p99_s": t.End.P99.Seconds()})
	}
	if after, err := st.spent(); err == nil && spentErr == nil {
		figs["server_cpu_s"], figs["device_flushes"] = after.cpu-before.cpu, float64(after.flushes-before.flushes)
	}
	st.set(prefix, figs)
	return nil
}

// usage is what the servers had spent at a moment.
type usage struct {
	cpu     float64 // seconds, user and system, every server process
	flushes int64   // flush requests the data's device completed
}

// spent reads what the servers spent so far.
func (st *steps) spent() (usage, error) {
	var pids []int
	switch {
	case st.server != nil:
		pids = append(pids, st.server.Pid())
	case st.cluster != nil:
		for _, n := range st.cluster.Running() {
			pids = append(pids, n.Child().Pid())
		}
	}
	var u usage
	for _, pid := range pids {
		c, err := harness.CPU(pid)
		if err != nil {
			return u, err
		}
		u.cpu += c
	}
	disk, err := bench.DiskFor(st.dir)
	if err != nil {
		return u, err
	}
	ds, err := disk.Stats()
	u.flushes = ds.FlushOps
	return u, err
}

// ingest runs the engine's bulk ingest in this process.
func (st *steps) ingest(prefix string, in *workloads.Ingest) error {
	cfg := logbench.Default()
	cfg.Records = in.Records
	dir := filepath.Join(st.dir, "ingest")
	s := logbench.Ingest(st.srv, dir, cfg)
	_ = os.RemoveAll(dir)
	if s.Err != "" {
		return errors.New(s.Err)
	}
	f := s.Figures()
	st.set(prefix, map[string]float64{"bytes_per_s": f["mb_per_s"] * 1e6, "records_per_s": f["records_per_s"]})
	return nil
}

func (st *steps) consume(ctx context.Context, prefix string, c *workloads.Consume) error {
	records := st.produced
	if c.ReadCommitted {
		records -= st.aborted
	}
	progress, finish := st.cfg.Bar(st.srv+" "+prefix, records)
	r, err := st.d.Consume(ctx, load.ConsumeConfig{Topic: st.loadTopic(), Records: records, Progress: progress,
		ReadCommitted: c.ReadCommitted})
	finish()
	if err != nil {
		return err
	}
	st.set(prefix, map[string]float64{"records": float64(r.Records), "records_per_s": r.RecordsPerSec, "mb_per_s": r.MBPerSec})
	return nil
}
