package logbench

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/minikafka/minikafka/bench"
)

// coldResident is the share of a directory's pages that may still be cached
// for a read to count as cold.
const coldResident = 0.01

// runner carries what one Run shares between workloads.
type runner struct {
	cfg     Config
	root    string
	payload *bench.Payload
	disk    *bench.Disk // nil when the device counters cannot be read
	// progress is set to finished, the figures measured so far.
	progress func(int64)
	finished int64
}

// steps is how many figures one repetition of s produces.
func (r *runner) steps(s Subject) int {
	n := 0
	if s.Writer != nil {
		n += len(r.cfg.Writers)
	}
	if s.Ingester != nil {
		n += 1 + len(readBacks(s)) + len(r.replicaWorkloads(s))
	}
	return n
}

// replicaWorkloads lists the workloads past the read-backs that s takes
// part in: restarts after a kill, truncations and deletion, catch-up.
func (r *runner) replicaWorkloads(s Subject) []string {
	var out []string
	if s.Engine != nil && r.cfg.Self != "" {
		out = append(out, WorkloadKill, WorkloadKillCold)
	}
	if s.Engine != nil {
		for _, pct := range TruncateShares {
			out = append(out, TruncateWorkload(pct))
		}
		out = append(out, WorkloadDeleteHalf)
	}
	if s.Durable {
		out = append(out, WorkloadCatchUp)
	}
	return out
}

// done counts a figure measured.
func (r *runner) done() {
	if r.finished++; r.progress != nil {
		r.progress(r.finished)
	}
}

// rep runs one repetition of every workload s takes part in.
func (r *runner) rep(s Subject, rep int) []Sample {
	var out []Sample
	if s.Writer != nil {
		for _, w := range r.cfg.Writers {
			out = append(out, r.appendOnce(s, w, rep))
		}
	}
	if s.Ingester != nil {
		out = append(out, r.ingestAndRead(s, rep)...)
		if s.Durable {
			out = append(out, r.catchUpOnce(s, rep))
		}
	}
	return out
}

// remove deletes a workload's directory and waits until the filesystem
// has committed it (syncfs), so that the next workload does not start
// beside the journal commit and the discards of the deletion (the data
// disk here is mounted with discard, and a workload's files are a GiB).
func (r *runner) remove(dir string) {
	_ = os.RemoveAll(dir)
	_ = bench.SyncFS(r.root)
}

// deviceStats reads the device counters, or returns nil without them.
func (r *runner) deviceStats() *bench.DiskStats {
	if r.disk == nil {
		return nil
	}
	st, err := r.disk.Stats()
	if err != nil {
		return nil
	}
	return &st
}

func deviceDelta(before, after *bench.DiskStats) *bench.DiskStats {
	if before == nil || after == nil {
		return nil
	}
	d := after.Sub(*before)
	return &d
}

func failed(workload string, rep int, err error) Sample {
	return Sample{Workload: workload, Rep: rep, Err: err.Error()}
}

func (r *runner) appendOnce(s Subject, writers, rep int) Sample {
	name := AppendWorkload(writers)
	defer r.done()
	dir := r.scratch(s.Name, name, rep)
	defer r.remove(dir)
	w, err := s.Writer(dir)
	if err != nil {
		return failed(name, rep, fmt.Errorf("open: %w", err))
	}
	runtime.GC() // the previous workload's garbage is not this one's cost
	before := r.deviceStats()
	smp := durableAppend(w, writers, r.cfg.AppendRecordBytes, r.cfg.AppendDuration, r.payload)
	after := r.deviceStats()
	if err := w.Close(); err != nil && smp.Err == "" {
		smp.Err = fmt.Sprintf("close: %v", err)
	}
	smp.Workload, smp.Rep, smp.Device = name, rep, deviceDelta(before, after)
	return smp
}

// readBacks lists the workloads that read back what the ingest wrote.
func readBacks(s Subject) []string {
	if !s.Durable {
		return []string{WorkloadRead} // while still open
	}
	var out []string
	if s.Reopen != nil {
		out = append(out, WorkloadReopen, WorkloadReopenWarm)
	}
	if s.Scanner != nil {
		out = append(out, WorkloadRead)
	}
	return out
}

// ingestAndRead runs the bulk ingest, then (for a durable subject, after a
// clean close) reopen-to-first-read, cold then warm, and the cold sequential
// read of the same log; for an engine, then the restarts after a kill and
// the truncations and deletion of the same log.
func (r *runner) ingestAndRead(s Subject, rep int) []Sample {
	dir := r.scratch(s.Name, WorkloadIngest, rep)
	defer r.remove(dir)
	in, smp := r.ingestOnce(s, dir, rep)
	r.done()
	out := []Sample{smp}
	for _, wl := range readBacks(s) {
		var got Sample
		switch {
		case smp.Err != "":
			got = failed(wl, rep, errors.New("ingest failed")) // nothing trustworthy to read
		case !s.Durable:
			got = r.readOpen(in, smp, rep)
		case wl == WorkloadRead:
			got = r.readCold(s, dir, smp, rep)
		default:
			got = r.reopenOnce(s, dir, rep, wl == WorkloadReopen)
		}
		out = append(out, got)
		r.done()
	}
	if s.Engine == nil {
		return out
	}
	if smp.Err != "" {
		for _, wl := range r.replicaWorkloads(s) {
			if wl != WorkloadCatchUp {
				out = append(out, failed(wl, rep, errors.New("ingest failed")))
			}
		}
		return out
	}
	if r.cfg.Self != "" {
		for _, cold := range []bool{false, true} {
			out = append(out, r.killOnce(s, dir, rep, cold))
			r.done()
		}
	}
	return append(out, r.trimOnce(s, dir, rep)...)
}

// ingestOnce ingests into dir. A durable subject is closed before it
// returns (the device figures run from the end of open to the end of close,
// as for durable append, so that whatever the subject writes at close
// counts); a non-durable one is returned open.
func (r *runner) ingestOnce(s Subject, dir string, rep int) (Ingester, Sample) {
	batches := ingestBatches(r.cfg.Records, r.cfg.BatchRecords, r.cfg.RecordBytes, r.payload)
	in, err := s.Ingester(dir)
	if err != nil {
		return nil, failed(WorkloadIngest, rep, fmt.Errorf("open: %w", err))
	}
	runtime.GC()
	before := r.deviceStats()
	smp := ingest(in, batches, r.cfg.Records, r.cfg.BatchRecords)
	smp.Workload, smp.Rep = WorkloadIngest, rep
	if !s.Durable && smp.Err == "" {
		return in, smp
	}
	if err := in.Close(); err != nil && smp.Err == "" {
		smp.Err = fmt.Sprintf("close: %v", err)
	}
	smp.Device = deviceDelta(before, r.deviceStats())
	if u, err := bench.DirUsage(dir); err == nil && !s.Overwrites {
		smp.Usage = &u
	}
	return nil, smp
}

func (r *runner) readOpen(in Ingester, wrote Sample, rep int) Sample {
	defer in.Close()
	sc, ok := in.(Scanner)
	if !ok {
		return failed(WorkloadRead, rep, errors.New("a subject that is not durable must scan while open"))
	}
	smp := scan(sc, wrote.Records, wrote.PayloadBytes)
	smp.Workload, smp.Rep, smp.Cache = WorkloadRead, rep, "open"
	return smp
}

// reopenOnce times Open to first read, after evicting dir from the page
// cache when cold is set (else just after the previous reopen, warm).
func (r *runner) reopenOnce(s Subject, dir string, rep int, cold bool) Sample {
	wl, cache := WorkloadReopenWarm, "warm"
	if cold {
		var err error
		wl = WorkloadReopen
		if cache, err = evict(dir); err != nil {
			return failed(wl, rep, err)
		}
	}
	before := r.deviceStats()
	took, err := s.Reopen(dir)
	if err != nil {
		return failed(wl, rep, err)
	}
	return Sample{Workload: wl, Rep: rep, Records: 1, Seconds: took.Seconds(),
		Cache: cache, Device: deviceDelta(before, r.deviceStats())}
}

// readCold evicts dir from the page cache, opens the subject on it, evicts
// again (whatever the open itself read goes too; pages an engine keeps
// mapped cannot go, and the cache label then says so) and scans.
func (r *runner) readCold(s Subject, dir string, wrote Sample, rep int) Sample {
	if _, err := evict(dir); err != nil {
		return failed(WorkloadRead, rep, err)
	}
	sc, err := s.Scanner(dir)
	if err != nil {
		return failed(WorkloadRead, rep, fmt.Errorf("open: %w", err))
	}
	defer sc.Close()
	cache, err := evict(dir)
	if err != nil {
		return failed(WorkloadRead, rep, err)
	}
	before := r.deviceStats()
	smp := scan(sc, wrote.Records, wrote.PayloadBytes)
	smp.Workload, smp.Rep, smp.Cache = WorkloadRead, rep, cache
	smp.Device = deviceDelta(before, r.deviceStats())
	return smp
}

// evict drops dir from the page cache and says how cold it got.
func evict(dir string) (string, error) {
	method, resident, err := bench.EvictCache(dir)
	if err != nil {
		return "", err
	}
	if resident <= coldResident {
		return "cold (" + method + ")", nil
	}
	return fmt.Sprintf("warm (%.0f%% resident after %s)", resident*100, method), nil
}

// Ingest runs the engines profile's bulk ingest once on engine in dir
// (Config's Records of RecordBytes in batches of BatchRecords, each
// durable before the next, under sync=always; the engine closed at the
// end) and returns its sample; BytesPerSecond reads its rate. The
// replication profile compares followers catching up with it.
func Ingest(engine, dir string, c Config) Sample {
	s, err := EngineSubject(engine)
	if err != nil {
		return failed(WorkloadIngest, 1, err)
	}
	r := &runner{cfg: c, root: dir, payload: bench.NewPayload(1, 8<<20)}
	if r.disk, err = bench.DiskFor(dir); err != nil {
		r.disk = nil
	}
	in, smp := r.ingestOnce(s, dir, 1)
	if in != nil {
		_ = in.Close() // an engine that is not durable comes back open
	}
	return smp
}
