package logbench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/minikafka/minikafka/bench"
	"github.com/minikafka/minikafka/engine"
)

// What replication asks of an engine, on the log the bulk ingest left: a
// follower whose log diverged truncates its tail (the last 1 %, 10 % or
// 50 % of it, each from the whole log: what a cut drops is appended again,
// untimed, before the next), retention or a follower restarting at its
// leader's log start deletes the oldest half, and a follower catching up
// appends batches received with their offsets as fast as it can make them
// durable.

// TruncateShares are the shares of the log's tail the truncation workloads
// cut, in percent.
var TruncateShares = []int{1, 10, 50}

// Workloads of replication's demands.
const (
	WorkloadDeleteHalf = "delete-half"
	WorkloadCatchUp    = "catch-up"
)

// TruncateWorkload names the truncation of the last pct percent.
func TruncateWorkload(pct int) string { return fmt.Sprintf("truncate-%d", pct) }

// Catch-up's shape: a fetch response of fetchBatches batches of
// fetchBatchRecords records, appended one by one and synced once.
const (
	fetchBatchRecords = 160
	fetchBatches      = 64
)

// trimOnce runs the truncations and then the deletion on the log in dir
// (batches of Config.BatchRecords from offset 0), each timed alone.
func (r *runner) trimOnce(s Subject, dir string, rep int) []Sample {
	var out []Sample
	fail := func(err error) []Sample {
		for _, pct := range TruncateShares[len(out):] {
			out = append(out, failed(TruncateWorkload(pct), rep, err))
		}
		return append(out, failed(WorkloadDeleteHalf, rep, err))
	}
	e, err := s.Engine(dir)
	if err != nil {
		return fail(fmt.Errorf("open: %w", err))
	}
	batch := int64(r.cfg.BatchRecords)
	records := e.EndOffset()
	for _, pct := range TruncateShares {
		cut := records * int64(100-pct) / 100 / batch * batch
		smp, err := r.truncateAt(e, cut, records)
		r.done()
		if err != nil {
			e.Close()
			return fail(err)
		}
		smp.Workload, smp.Rep = TruncateWorkload(pct), rep
		out = append(out, smp)
	}
	defer r.done()
	before, err := bench.DirUsage(dir)
	if err != nil {
		e.Close()
		return fail(err)
	}
	dev := r.deviceStats()
	smp := timed(func() error { return e.DeleteBefore(records / 2) })
	smp.Device = deviceDelta(dev, r.deviceStats())
	if err := e.Close(); err != nil && smp.Err == "" {
		smp.Err = fmt.Sprintf("close: %v", err)
	}
	if after, err := bench.DirUsage(dir); err == nil {
		smp.Freed = before.Allocated - after.Allocated
	}
	smp.Workload, smp.Rep, smp.Records = WorkloadDeleteHalf, rep, records/2
	return append(out, smp)
}

// truncateAt times e.Truncate(cut), then appends again, untimed and synced
// once, what it dropped up to end.
func (r *runner) truncateAt(e engine.LogEngine, cut, end int64) (Sample, error) {
	dev := r.deviceStats()
	smp := timed(func() error { return e.Truncate(cut) })
	smp.Device = deviceDelta(dev, r.deviceStats())
	if smp.Err != "" {
		return smp, fmt.Errorf("truncate to %d: %s", cut, smp.Err)
	}
	smp.Records = end - e.EndOffset() // what the cut dropped, from the batch holding cut on
	l := &engineLog{e: e, next: e.EndOffset()}
	data := make([]byte, r.cfg.BatchRecords*r.cfg.RecordBytes)
	for l.next < end {
		r.payload.Fill(l.next, data)
		stamp(data, l.next)
		if _, err := l.append(data, int32(r.cfg.BatchRecords)); err != nil {
			return smp, err
		}
	}
	if err := e.Sync(context.Background(), end); err != nil {
		return smp, fmt.Errorf("sync after appending again: %w", err)
	}
	return smp, nil
}

func timed(op func() error) Sample {
	start := time.Now()
	err := op()
	smp := Sample{Seconds: time.Since(start).Seconds()}
	if err != nil {
		smp.Err = err.Error()
	}
	return smp
}

// catchUpOnce appends Config.Records records into a fresh log as a
// follower receives them: fetches of fetchBatches batches, each batch
// appended at the offset it came with, one sync per fetch.
func (r *runner) catchUpOnce(s Subject, rep int) Sample {
	defer r.done()
	dir := r.scratch(s.Name, WorkloadCatchUp, rep)
	defer r.remove(dir)
	batches := ingestBatches(r.cfg.Records, fetchBatchRecords, r.cfg.RecordBytes, r.payload)
	in, err := s.Ingester(dir)
	if err != nil {
		return failed(WorkloadCatchUp, rep, fmt.Errorf("open: %w", err))
	}
	runtime.GC()
	before := r.deviceStats()
	lat := bench.NewLatency()
	start := time.Now()
	smp := Sample{Workload: WorkloadCatchUp, Rep: rep}
	for i := 0; i < len(batches) && smp.Err == ""; i += fetchBatches {
		fetch := batches[i:min(i+fetchBatches, len(batches))]
		t0 := time.Now()
		if err := writeFetch(in, fetch, r.cfg.RecordBytes); err != nil {
			smp.Err = fmt.Sprintf("fetch at batch %d: %v", i, err)
		}
		lat.Record(time.Since(t0))
		for _, b := range fetch {
			smp.PayloadBytes += int64(len(b))
			smp.Records += int64(len(b) / r.cfg.RecordBytes)
		}
	}
	smp.Seconds = time.Since(start).Seconds()
	sum := lat.Summary()
	smp.Latency = &sum
	if err := in.Close(); err != nil && smp.Err == "" {
		smp.Err = fmt.Sprintf("close: %v", err)
	}
	smp.Device = deviceDelta(before, r.deviceStats())
	return smp
}

// writeFetch makes one fetch durable: an engine appends its batches one by
// one and syncs once; a raw file writes them as one and fdatasyncs.
func writeFetch(in Ingester, fetch [][]byte, recordBytes int) error {
	records := 0
	for _, b := range fetch {
		records += len(b) / recordBytes
	}
	l, ok := in.(*engineLog)
	if !ok {
		var data []byte
		for _, b := range fetch {
			data = append(data, b...)
		}
		return in.WriteBatch(data, int32(records))
	}
	var end int64
	for _, b := range fetch {
		var err error
		if end, err = l.append(b, int32(len(b)/recordBytes)); err != nil {
			return err
		}
	}
	return l.e.Sync(context.Background(), end)
}
