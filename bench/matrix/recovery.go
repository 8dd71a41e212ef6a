package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// recoveryWorkload fills the recovery data set: large records, many in
// flight, acks=all, so that a gibibyte goes in quickly and every
// acknowledged record passed the broker's durability wait.
var recoveryWorkload = Workload{RecordBytes: 16384, InFlight: 256, Acks: "all"}

// recoveryLimit bounds each wait of a recovery: the produce phase and each
// restart.
const recoveryLimit = 10 * time.Minute

// recoveries runs the crash figure for every durable engine target: the
// recovery data set under sync=always, and a smaller durability check
// under sync=interval.
func (r *runner) recoveries(ctx context.Context) error {
	for _, t := range r.cfg.Targets {
		if _, ok := t.Driver.(Kafka); !ok || !t.Durable || t.Kind != KindEngine {
			continue
		}
		for _, c := range []struct {
			sync  string
			bytes int64
		}{{"always", r.cfg.Profile.RecoveryBytes}, {"interval", r.cfg.Profile.KillBytes}} {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if c.bytes <= 0 {
				continue
			}
			fmt.Fprintf(r.cfg.Log, "recovery %s sync=%s: %s, then kill -9\n", t.Name, c.sync, bench.Bytes(c.bytes))
			rec := r.recovery(ctx, t, c.sync, c.bytes)
			r.run.Recoveries = append(r.run.Recoveries, rec)
			if rec.Error != "" {
				fmt.Fprintf(r.cfg.Log, "  FAILED: %s\n", rec.Error)
			} else {
				fmt.Fprintf(r.cfg.Log, "  %d records acknowledged, %d lost; restart to first fetch %s (warm), %s (cold)\n",
					rec.Records, rec.Lost, bench.Millis(rec.Warm), bench.Millis(rec.Cold))
			}
		}
	}
	return nil
}

// recovery fills a fresh server with bytes of payload, kills it with
// SIGKILL while the producer is still sending, restarts it and times exec
// to the first record fetched, checks that every acknowledged record is
// there, then does it again with the page cache evicted.
func (r *runner) recovery(ctx context.Context, t Target, policy string, bytes int64) (rec *Recovery) {
	rec = &Recovery{Target: t.Name, Sync: policy}
	k := t.Driver.(Kafka)
	dir, err := r.cellDir(t.Name, "recovery-"+policy, 0)
	if err != nil {
		rec.Error = oneLine(err.Error())
		return rec
	}
	var srv *Server
	defer func() {
		if srv != nil {
			if err := srv.Stop(); err != nil && rec.Error == "" {
				rec.Error = oneLine("stop: " + err.Error())
			}
		}
		if u, err := bench.DirUsage(dir); err == nil {
			rec.Disk = u
		}
		_ = os.RemoveAll(dir)
	}()
	fail := func(err error) *Recovery {
		rec.Error = oneLine(err.Error())
		return rec
	}
	if srv, err = t.Start(ctx, dir, policy); err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	acked, err := r.fillAndKill(ctx, t, k, srv, policy, bytes, rec)
	srv = nil // killed
	if err != nil {
		return fail(err)
	}
	if srv, rec.Warm, err = r.timedRestart(ctx, t, k, dir, policy); err != nil {
		return fail(fmt.Errorf("restart after kill -9: %w", err))
	}
	if rec.Lost, err = lost(ctx, k, srv, acked); err != nil {
		return fail(err)
	}
	err = srv.Kill()
	srv = nil
	if err != nil {
		return fail(fmt.Errorf("second kill -9: %w", err))
	}
	if _, _, err := bench.EvictCache(dir); err != nil {
		return fail(fmt.Errorf("evict page cache: %w", err))
	}
	if srv, rec.Cold, err = r.timedRestart(ctx, t, k, dir, policy); err != nil {
		return fail(fmt.Errorf("cold restart after kill -9: %w", err))
	}
	return rec
}

// fillAndKill produces until bytes are acknowledged, then kills the
// server with SIGKILL while records are still in flight. It returns, per
// partition, the end of the acknowledged records.
func (r *runner) fillAndKill(ctx context.Context, t Target, k Kafka, srv *Server, policy string, bytes int64, rec *Recovery) (map[int32]int64, error) {
	pctx, cancel := context.WithTimeout(ctx, recoveryLimit)
	defer cancel()
	var once sync.Once
	var killErr error
	kill := func() {
		once.Do(func() {
			killErr = srv.Kill()
			cancel()
		})
	}
	// The caller counts on the server being dead whatever happens here.
	defer kill()
	if err := k.Prepare(pctx, srv, r.cfg.Profile.Partitions); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	progress, finish := r.cfg.Bar(fmt.Sprintf("recovery data %s sync=%s", t.Name, policy), bytes)
	w := recoveryWorkload
	w.Sync = policy
	spec := Spec{Workload: w, Duration: recoveryLimit, MaxBytes: 2 * bytes, TrackAcked: true,
		Progress: func(b int64) {
			if progress != nil {
				progress(min(b, bytes))
			}
			if b >= bytes {
				kill()
			}
		}}
	p, err := k.Produce(pctx, srv, spec)
	finish()
	kill() // the producer may have stopped before the mark (an error, the limit)
	rec.Bytes, rec.Records = p.Bytes, p.Records
	switch {
	case killErr != nil:
		return nil, fmt.Errorf("kill -9: %w", killErr)
	case p.Bytes < bytes:
		if err == nil {
			err = errors.New(p.FirstError)
		}
		return nil, fmt.Errorf("produce: only %s of %s acknowledged before the server stopped: %v",
			bench.Bytes(p.Bytes), bench.Bytes(bytes), err)
	}
	return p.Acked, nil
}

// timedRestart starts the server on dir and returns it with the seconds
// from exec to the first record fetched.
func (r *runner) timedRestart(ctx context.Context, t Target, k Kafka, dir, policy string) (*Server, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, recoveryLimit)
	defer cancel()
	start := time.Now()
	srv, err := t.Start(ctx, dir, policy)
	if err != nil {
		return nil, 0, err
	}
	if err := k.FirstRecord(ctx, srv); err != nil {
		return srv, 0, err
	}
	return srv, time.Since(start).Seconds(), nil
}

// lost counts acknowledged records missing after recovery: per partition,
// the acknowledged end past the recovered end. The idempotent producer
// keeps each partition in order, so every record below a partition's
// highest acknowledged one was acknowledged too.
func lost(ctx context.Context, k Kafka, srv *Server, acked map[int32]int64) (int64, error) {
	ends, err := k.EndOffsets(ctx, srv)
	if err != nil {
		return 0, fmt.Errorf("end offsets after recovery: %w", err)
	}
	var n int64
	for p, a := range acked {
		if e := ends[p]; e < a {
			n += a - e
		}
	}
	return n, nil
}
