package logbench

import (
	"fmt"
	"sync"
	"time"

	"github.com/minikafka/minikafka/bench"
)

// Workload names, as they appear in Results.
const (
	WorkloadIngest = "ingest"
	WorkloadRead   = "read"
	// WorkloadReopen is open to first read with the log evicted from the
	// page cache; WorkloadReopenWarm repeats it at once, cache warm.
	WorkloadReopen     = "reopen"
	WorkloadReopenWarm = "reopen-warm"
)

// AppendWorkload names durable append with n concurrent writers.
func AppendWorkload(writers int) string { return fmt.Sprintf("append-%d", writers) }

// Sample is one repetition of one workload on one subject.
type Sample struct {
	Workload string `json:"workload"`
	Rep      int    `json:"rep"`
	// Records and PayloadBytes are what the workload wrote or read.
	Records      int64 `json:"records"`
	PayloadBytes int64 `json:"payload_bytes"`
	// Seconds is the measured time: from the first operation until the last
	// one returned (for reopen, from open until the first record was read).
	Seconds float64 `json:"seconds"`
	// Latency of each operation: a durable append, or one batch of an ingest.
	Latency *bench.Summary `json:"latency,omitempty"`
	// Device is what reached the block device while the workload ran (for an
	// ingest, from open to close); nil when the counters cannot be read.
	Device *bench.DiskStats `json:"device,omitempty"`
	// Usage is the directory's size after the ingest closed.
	Usage *bench.Usage `json:"usage,omitempty"`
	// Freed is how much the directory's allocation shrank (a deletion's
	// space returned, measured after the engine closed).
	Freed int64 `json:"freed,omitempty"`
	// Cache says whether the data was read from the device: "cold", "warm
	// (n% resident)" or "open" for an engine read while still open.
	Cache string `json:"cache,omitempty"`
	// Lent says a read reused one lent buffer (the raw file, an
	// engine.BufferReader) instead of getting a new one per Read.
	Lent bool `json:"lent,omitempty"`
	// Err is set when the repetition failed; its figures are then missing.
	Err string `json:"error,omitempty"`
}

// durableAppend runs writers goroutines that each write records of
// recordBytes through w, one at a time, each durable before the next, until
// d has passed.
func durableAppend(w Writer, writers, recordBytes int, d time.Duration, p *bench.Payload) Sample {
	s := Sample{}
	lat := make([]*bench.Latency, writers)
	counts := make([]int64, writers)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		stop     = make(chan struct{})
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := range writers {
		lat[i] = bench.NewLatency()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int64(0); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				if err := w.Write(p.Record(int64(i)<<32|n, recordBytes)); err != nil {
					errOnce.Do(func() { firstErr = err; close(stop) })
					return
				}
				lat[i].Record(time.Since(t0))
				counts[i]++
			}
		}()
	}
	wg.Wait()
	s.Seconds = time.Since(start).Seconds()
	if firstErr != nil {
		s.Err = firstErr.Error()
		return s
	}
	all := bench.NewLatency()
	for i := range writers {
		all.Merge(lat[i])
		s.Records += counts[i]
	}
	sum := all.Summary()
	s.Latency = &sum
	s.PayloadBytes = s.Records * int64(recordBytes)
	return s
}

// ingestBatches prepares the batches of an ingest before the clock starts,
// so that allocating and filling them (page faults on fresh memory cost as
// much as a fast disk's write here) is not charged to the subject. Each batch
// is its own slice, never reused, because an engine may keep what Append was
// given, and starts with its base offset (see stamp).
func ingestBatches(records int64, batchRecords, recordBytes int, p *bench.Payload) [][]byte {
	var out [][]byte
	for base := int64(0); base < records; base += int64(batchRecords) {
		n := int(min(int64(batchRecords), records-base))
		data := make([]byte, n*recordBytes)
		p.Fill(base, data)
		if len(data) >= stampBytes {
			stamp(data, base)
		}
		out = append(out, data)
	}
	return out
}

// ingest writes the batches in order, each of them durable before the next;
// every batch but the last holds batchRecords records.
func ingest(in Ingester, batches [][]byte, records int64, batchRecords int) Sample {
	s := Sample{}
	lat := bench.NewLatency()
	start := time.Now()
	for i, data := range batches {
		base := int64(i) * int64(batchRecords)
		n := int32(min(int64(batchRecords), records-base))
		t0 := time.Now()
		if err := in.WriteBatch(data, n); err != nil {
			s.Err = fmt.Sprintf("batch at %d: %v", base, err)
			return s
		}
		lat.Record(time.Since(t0))
		s.Records += int64(n)
		s.PayloadBytes += int64(len(data))
	}
	s.Seconds = time.Since(start).Seconds()
	sum := lat.Summary()
	s.Latency = &sum
	return s
}

// lender is a Scanner that can say whether it reads into one lent buffer.
type lender interface{ Lends() bool }

// scan reads everything back and checks the count against what was written.
func scan(sc Scanner, wantRecords, wantBytes int64) Sample {
	s := Sample{}
	if l, ok := sc.(lender); ok {
		s.Lent = l.Lends()
	}
	start := time.Now()
	records, bytes, err := sc.Scan()
	s.Seconds = time.Since(start).Seconds()
	if err == nil && (records != wantRecords || bytes != wantBytes) {
		err = fmt.Errorf("read back %d records, %d bytes; wrote %d records, %d bytes", records, bytes, wantRecords, wantBytes)
	}
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.Records, s.PayloadBytes = records, bytes
	return s
}
