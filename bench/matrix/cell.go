package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/broker/harness"
)

// cell runs one repetition of target t under point p: start, warm up,
// measure, optionally read, stop, measure the directory, clean up.
func (r *runner) cell(ctx context.Context, t Target, p Point, rep int) (out Rep) {
	out.Fsyncs, out.CommitWaiters, out.ProcWritten, out.CPUSeconds = -1, -1, -1, -1
	dir, err := r.cellDir(t.Name, p.Key(), rep)
	if err != nil {
		out.Error = oneLine(err.Error())
		return out
	}
	srv, err := t.Start(ctx, dir, p.Sync)
	if err != nil {
		out.Error = oneLine("start: " + err.Error())
		return out
	}
	defer func() { r.finish(t, srv, dir, &out) }()
	err = r.produce(ctx, t, srv, p.Workload, &out)
	if err == nil && p.Consume {
		err = r.consume(ctx, t, &srv, dir, p.Workload, &out)
	}
	// A server that died says why when it is stopped (finish); one that
	// still runs may have logged why it failed the clients (a full disk).
	if err != nil && !errors.Is(err, errExited) && srv != nil {
		if w := srv.LastWords(); w != "" {
			err = fmt.Errorf("%w; the server's last output: %s", err, w)
		}
	}
	if err != nil {
		out.Error = oneLine(err.Error())
	}
	return out
}

// produce creates the topic, warms up and runs the measured phase with a
// probe of the server on either side.
func (r *runner) produce(ctx context.Context, t Target, srv *Server, w Workload, out *Rep) error {
	pctx, stop := watch(ctx, srv)
	defer stop()
	if err := t.Driver.Prepare(pctx, srv, r.cfg.Profile.Partitions); err != nil {
		return phaseErr(pctx, "create topic", err)
	}
	spec := Spec{Workload: w, Duration: r.cfg.Profile.WarmUp, MaxBytes: r.cfg.Profile.MaxPhaseBytes}
	if spec.Duration > 0 {
		warm, err := t.Driver.Produce(pctx, srv, spec)
		out.LogPayload += warm.Bytes
		if err = produceErr(warm, err); err != nil {
			return phaseErr(pctx, "warm-up", err)
		}
	}
	before := r.probe(pctx, srv)
	spec.Duration = r.cfg.Profile.Duration
	p, err := t.Driver.Produce(pctx, srv, spec)
	after := r.probe(pctx, srv)
	out.Produce, out.Batches = p.ProduceResult, p.Batches
	out.LogPayload += p.Bytes
	r.deltas(t, before, after, out)
	if rss, err := srv.PeakRSS(); err == nil {
		out.PeakRSS = rss
	}
	if err = produceErr(p, err); err != nil {
		return phaseErr(pctx, "produce", err)
	}
	return nil
}

// produceErr makes failed records an error.
func produceErr(p Produced, err error) error {
	if err == nil && p.Errors > 0 {
		err = fmt.Errorf("%d records failed: %s", p.Errors, p.FirstError)
	}
	if err == nil && p.Records == 0 {
		err = errors.New("no record acknowledged")
	}
	return err
}

// consume reads the tail while producing, then everything from the start:
// after a restart with the page cache evicted for a durable target, from
// the running server otherwise. *srv is replaced by the restarted server.
func (r *runner) consume(ctx context.Context, t Target, srv **Server, dir string, w Workload, out *Rep) error {
	pctx, stop := watch(ctx, *srv)
	spec := Spec{Workload: w, Duration: r.cfg.Profile.Duration, MaxBytes: r.cfg.Profile.MaxPhaseBytes}
	tail, err := t.Driver.Tail(pctx, *srv, spec)
	out.LogPayload += tail.Produce.Bytes
	if err == nil && tail.Produce.Errors > 0 {
		err = fmt.Errorf("%d records failed: %s", tail.Produce.Errors, tail.Produce.FirstError)
	}
	if err != nil {
		defer stop()
		return phaseErr(pctx, "tail read", err)
	}
	out.Tail = &tail
	if rss, err := (*srv).PeakRSS(); err == nil {
		out.PeakRSS = rss
	}
	records, err := t.Driver.Records(pctx, *srv)
	stop()
	if err != nil {
		return fmt.Errorf("count records: %w", err)
	}
	if t.Durable {
		if err := r.restartCold(ctx, t, srv, dir, w.Sync); err != nil {
			return err
		}
		out.CatchUpCold = true
	}
	pctx, stop = watch(ctx, *srv)
	defer stop()
	cu, err := t.Driver.CatchUp(pctx, *srv, records)
	if err != nil {
		return phaseErr(pctx, "catch-up read", err)
	}
	out.CatchUp = &cu
	return nil
}

// restartCold stops the server, evicts its data from the page cache and
// starts it again on the same directory.
func (r *runner) restartCold(ctx context.Context, t Target, srv **Server, dir, sync string) error {
	err := (*srv).Stop()
	*srv = nil
	if err != nil {
		return fmt.Errorf("stop before catch-up: %w", err)
	}
	if _, _, err := bench.EvictCache(dir); err != nil {
		fmt.Fprintf(r.cfg.Log, "  page cache not evicted, the catch-up read may be warm: %v\n", err)
	}
	s, err := t.Start(ctx, dir, sync)
	if err != nil {
		return fmt.Errorf("restart for catch-up: %w", err)
	}
	*srv = s
	return nil
}

// finish stops the server, measures the directory and removes it.
func (r *runner) finish(t Target, srv *Server, dir string, out *Rep) {
	if srv != nil {
		if err := srv.Stop(); err != nil && out.Error == "" {
			out.Error = oneLine("stop: " + err.Error())
		} else if err != nil {
			out.Error = oneLine(out.Error + "; " + err.Error())
		}
	}
	if t.Durable {
		if u, err := bench.DirUsage(dir); err == nil {
			out.Disk = u
		}
	}
	// The data is not needed after the cell; a full disk would fail the
	// next one.
	_ = os.RemoveAll(dir)
}

// probe is a snapshot of a server's counters.
type probe struct {
	cpu       float64
	cpuErr    error
	io        harness.IO
	ioErr     error
	dev       bench.DiskStats
	devErr    error
	broker    BrokerCounters
	brokerErr error
}

func (r *runner) probe(ctx context.Context, s *Server) probe {
	var p probe
	p.cpu, p.cpuErr = harness.CPU(s.Pid())
	p.io, p.ioErr = harness.ReadIO(s.Pid())
	if r.disk != nil {
		p.dev, p.devErr = r.disk.Stats()
	} else {
		p.devErr = bench.ErrNoDevice
	}
	if s.MetricsURL != "" {
		p.broker, p.brokerErr = ScrapeBroker(ctx, s.MetricsURL)
	} else {
		p.brokerErr = errors.New("no metrics")
	}
	return p
}

// deltas fills the rep's counters from two probes; a counter either probe
// could not read stays unmeasured.
func (r *runner) deltas(t Target, a, b probe, out *Rep) {
	if a.cpuErr == nil && b.cpuErr == nil {
		out.CPUSeconds = b.cpu - a.cpu
	}
	if a.ioErr == nil && b.ioErr == nil {
		out.ProcWritten = b.io.Written(a.io)
	}
	if a.devErr == nil && b.devErr == nil {
		out.Device = b.dev.Sub(a.dev)
	}
	if a.brokerErr != nil || b.brokerErr != nil {
		return
	}
	if t.CountsFsyncs && a.broker.Fsyncs >= 0 && b.broker.Fsyncs >= 0 {
		out.Fsyncs = b.broker.Fsyncs - a.broker.Fsyncs
	}
	if n := b.broker.WaitersCount - a.broker.WaitersCount; n > 0 {
		out.CommitWaiters = (b.broker.WaitersSum - a.broker.WaitersSum) / n
	}
}
