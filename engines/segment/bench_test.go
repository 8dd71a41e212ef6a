//go:build linux

package segment

// Benchmarks for checking the engine against a plain file, on the real
// filesystem (b.TempDir). They are not part of the normal test run:
//
//	go test -run XXX -bench . -benchtime 20000x ./engines/segment
//
// `cmd/bench -profile engines` is the real comparison; these are for quick checks.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/engine/enginetest"
)

// rawGroupCommit is a plain file behind the simplest group commit: writers
// copy records into a shared buffer; one flusher writes and fdatasyncs it and
// releases all of them.
type rawGroupCommit struct {
	f    *os.File
	mu   sync.Mutex
	buf  []byte
	gen  chan struct{}
	kick chan struct{}
	stop chan struct{}
}

func newRawGroupCommit(dir string) (*rawGroupCommit, error) {
	f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r := &rawGroupCommit{f: f, gen: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	go r.loop()
	return r, nil
}

func (r *rawGroupCommit) loop() {
	var spare []byte
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		}
		r.mu.Lock()
		buf, gen := r.buf, r.gen
		r.buf, r.gen = spare[:0], make(chan struct{})
		r.mu.Unlock()
		if len(buf) > 0 {
			if _, err := r.f.Write(buf); err != nil {
				panic(err)
			}
			if err := r.f.Sync(); err != nil {
				panic(err)
			}
		}
		close(gen)
		spare = buf
	}
}

func (r *rawGroupCommit) append(data []byte) {
	r.mu.Lock()
	r.buf = append(r.buf, data...)
	gen := r.gen
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	<-gen
}

func (r *rawGroupCommit) close() { close(r.stop); r.f.Close() }

// BenchmarkDurableAppend: writers each append one 1 KiB record and wait for
// it to be durable, over and over; b.N records in all.
func BenchmarkDurableAppend(b *testing.B) {
	for _, writers := range []int{1, 256} {
		b.Run(fmt.Sprintf("raw/writers=%d", writers), func(b *testing.B) {
			r, err := newRawGroupCommit(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer r.close()
			rec := make([]byte, 1024)
			runWriters(b, writers, func() { r.append(rec) })
		})
		b.Run(fmt.Sprintf("segment/writers=%d", writers), func(b *testing.B) {
			e, err := Open(b.TempDir(), engine.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			rec := make([]byte, 1024)
			var assign sync.Mutex
			runWriters(b, writers, func() {
				assign.Lock()
				batch := engine.Batch{BaseOffset: e.EndOffset(), Records: 1, Data: rec}
				err := e.Append(batch)
				assign.Unlock()
				if err == nil {
					err = e.Sync(context.Background(), batch.NextOffset())
				}
				if err != nil {
					b.Error(err)
				}
			})
		})
	}
}

// runWriters runs b.N calls of op spread over writers goroutines and reports
// records/s and the 99th percentile latency.
func runWriters(b *testing.B, writers int, op func()) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lats []time.Duration
	)
	per := max(b.N/writers, 1)
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, per)
			for range per {
				t := time.Now()
				op()
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkBulkIngest: batches of 1000 records of 100 bytes, a Sync after
// each; b.N batches.
func BenchmarkBulkIngest(b *testing.B) {
	e, err := Open(b.TempDir(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	data := make([]byte, 100_000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		batch := engine.Batch{BaseOffset: e.EndOffset(), Records: 1000, Data: data}
		if err := e.Append(batch); err != nil {
			b.Fatal(err)
		}
		if err := e.Sync(context.Background(), batch.NextOffset()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSequentialRead reads a 100 MB log (page cache warm) in 1 MiB
// reads; b.N full passes.
func BenchmarkSequentialRead(b *testing.B) {
	dir := b.TempDir()
	e, err := Open(dir, engine.Options{Sync: engine.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if err := e.Append(enginetest.Batch(e.EndOffset(), 1000, 100_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	e, err = Open(dir, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, c := range scanners {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(100_000_000)
			for range b.N {
				c.scan(b, e)
			}
			b.ReportMetric(float64(b.N)*1e6/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// scanners read the whole log in 1 MiB reads: with Read (a new buffer per
// read) and with ReadInto (one buffer, reused).
var scanners = []struct {
	name string
	scan func(b *testing.B, e *Engine)
}{
	{"read", func(b *testing.B, e *Engine) {
		for off := int64(0); off < e.EndOffset(); {
			bs, err := e.Read(off, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			off = bs[len(bs)-1].NextOffset()
		}
	}},
	{"into", func(b *testing.B, e *Engine) {
		var buf []byte
		for off := int64(0); off < e.EndOffset(); {
			bs, next, err := e.ReadInto(buf, off, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			buf = next
			off = bs[len(bs)-1].NextOffset()
		}
	}},
}

// BenchmarkReopen: Open of a cleanly closed 1M-record log plus its first
// read.
func BenchmarkReopen(b *testing.B) {
	dir := b.TempDir()
	e, err := Open(dir, engine.Options{Sync: engine.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if err := e.Append(enginetest.Batch(e.EndOffset(), 1000, 100_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		e, err := Open(dir, engine.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Read(0, 1); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkColdRead reads a 100 MB log from a cold page cache (evicted with
// posix_fadvise before each pass), beside a plain sequential read(2) of the
// same segment files: b.N passes of each. As in the engines profile of cmd/bench, the
// engine is opened before the clock starts.
func BenchmarkColdRead(b *testing.B) {
	dir := b.TempDir()
	e, err := Open(dir, engine.Options{Sync: engine.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if err := e.Append(enginetest.Batch(e.EndOffset(), 1000, 100_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*"+logSuffix))
	b.Run("raw", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		for range b.N {
			b.StopTimer()
			evict(b, dir)
			b.StartTimer()
			for _, p := range logs {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := f.Read(buf); err != nil {
						break
					}
				}
				f.Close()
			}
		}
		b.ReportMetric(float64(b.N)*1e6/b.Elapsed().Seconds(), "records/s")
	})
	for _, c := range scanners {
		b.Run("segment-"+c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				evict(b, dir)
				e, err := Open(dir, engine.Options{})
				if err != nil {
					b.Fatal(err)
				}
				evict(b, dir) // what Open read too
				b.StartTimer()
				c.scan(b, e)
				e.Close()
			}
			b.ReportMetric(float64(b.N)*1e6/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// evict drops the page cache of every file in dir.
func evict(b *testing.B, dir string) {
	names, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkCheckpointCost is the A/B of the active segment's checkpoints:
// each pass ingests 254 MiB into one segment (batches of 1000 records of
// 100 bytes, a Sync after each) of a fresh log, with checkpoints and then
// without, and reads each back from a cold page cache. The figures of every pass are logged, so
// that they can be compared pair by pair:
//
//	go test -run XXX -bench CheckpointCost -benchtime 4x -v ./engines/segment
func BenchmarkCheckpointCost(b *testing.B) {
	modes := []struct {
		name        string
		checkpoints bool
	}{{"checkpoints", true}, {"none", false}}
	for i := range b.N {
		for _, m := range modes {
			ingest, read, extents := ingestAndScan(b, m.checkpoints)
			b.Logf("pass %d %-11s ingest %.0f records/s, cold read %.0f records/s, %s", i, m.name,
				2600e3/ingest.Seconds(), 2600e3/read.Seconds(), extents)
		}
	}
}

func ingestAndScan(b *testing.B, checkpoints bool) (ingest, read time.Duration, extents string) {
	dir := b.TempDir()
	e, err := Open(dir, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if !checkpoints {
		e.ckptBytes.Store(1 << 62)
	}
	data := make([]byte, 100_000)
	start := time.Now()
	for range 2600 {
		batch := engine.Batch{BaseOffset: e.EndOffset(), Records: 1000, Data: data}
		if err := e.Append(batch); err != nil {
			b.Fatal(err)
		}
		if err := e.Sync(context.Background(), batch.NextOffset()); err != nil {
			b.Fatal(err)
		}
	}
	ingest = time.Since(start)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("filefrag", filepath.Join(dir, logName(0))).Output(); err == nil {
		extents = strings.TrimSpace(string(out[strings.LastIndex(string(out), ":")+1:]))
	}
	evict(b, dir)
	e, err = Open(dir, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	evict(b, dir)
	start = time.Now()
	var buf []byte
	for off := int64(0); off < e.EndOffset(); {
		var bs []engine.Batch
		bs, buf, err = e.ReadInto(buf, off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		off = bs[len(bs)-1].NextOffset()
	}
	return ingest, time.Since(start), extents
}

// BenchmarkColdReadWays reads one 1 GiB segment log from a cold page cache
// in turn through the engine and through the ways a file can be read
// (pread of 1 or 8 MiB, pread after posix_fadvise(SEQUENTIAL), pread with
// a goroutine reading ahead with readahead(2), a shared mapping), evicting
// the file (fadvise, then drop_caches) before each, and logs every pass, so
// that the ways can be compared pass by pass:
//
//	go test -run XXX -bench ColdReadWays -benchtime 3x -v ./engines/segment
func BenchmarkColdReadWays(b *testing.B) {
	dir := b.TempDir()
	e, err := Open(dir, engine.Options{Sync: engine.SyncNever, SegmentBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 100_000)
	for range 10_000 {
		if err := e.Append(engine.Batch{BaseOffset: e.EndOffset(), Records: 1000, Data: data}); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, logName(0))
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := fi.Size()
	ways := []struct {
		name string
		read func(f *os.File)
	}{
		{"engine ReadInto 1 MiB", func(*os.File) {
			e, err := Open(dir, engine.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var buf []byte
			for off := int64(0); off < e.EndOffset(); {
				var bs []engine.Batch
				if bs, buf, err = e.ReadInto(buf, off, 1<<20); err != nil {
					b.Fatal(err)
				}
				off = bs[len(bs)-1].NextOffset()
			}
		}},
		{"pread 1 MiB", func(f *os.File) { preadAll(f, size, 1<<20, 0) }},
		{"pread 8 MiB", func(f *os.File) { preadAll(f, size, 8<<20, 0) }},
		{"pread 1 MiB, SEQUENTIAL", func(f *os.File) {
			_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL)
			preadAll(f, size, 1<<20, 0)
		}},
		{"pread 1 MiB, readahead 16 MiB ahead", func(f *os.File) { preadAll(f, size, 1<<20, 16<<20) }},
		{"mmap, copied out 1 MiB at a time", func(f *os.File) {
			m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 1<<20)
			for off := int64(0); off < size; off += int64(len(buf)) {
				copy(buf, m[off:])
			}
			_ = unix.Munmap(m)
		}},
	}
	for pass := range b.N {
		for _, w := range ways {
			evict(b, dir)
			_ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0)
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			w.read(f)
			took := time.Since(start)
			f.Close()
			b.Logf("pass %d %-36s %5.0f MB/s", pass, w.name, float64(size)/took.Seconds()/1e6)
		}
	}
}

// preadAll reads f sequentially in chunks; with ahead, a goroutine keeps
// readahead(2) that far in front of the reads.
func preadAll(f *os.File, size int64, chunk int, ahead int64) {
	var pos atomic.Int64
	done := make(chan struct{})
	if ahead > 0 {
		go func() {
			defer close(done)
			for issued := int64(0); issued < size; {
				if issued-pos.Load() >= ahead {
					runtime.Gosched()
					continue
				}
				_, _, _ = unix.Syscall(unix.SYS_READAHEAD, f.Fd(), uintptr(issued), uintptr(4<<20))
				issued += 4 << 20
			}
		}()
	} else {
		close(done)
	}
	buf := make([]byte, chunk)
	for off := int64(0); off < size; off += int64(chunk) {
		if _, err := f.ReadAt(buf, off); err != nil && off+int64(chunk) < size {
			panic(err)
		}
		pos.Store(off)
	}
	<-done
}
