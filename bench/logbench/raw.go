package logbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/minikafka/minikafka/bench"
)

// RawName names the raw-disk baseline; RawOverwriteName its variant that
// overwrites a pre-zeroed file.
const (
	RawName          = "raw"
	RawOverwriteName = "raw-overwrite"
)

// rawFileName is the file the raw baselines write in their directory.
const rawFileName = "raw.log"

// RawSubject is the limit of the disk for an appending log: a plain
// O_APPEND file. Durable append goes through a group-commit loop (one
// flusher goroutine that does one write and one fdatasync for every record
// queued before it, and releases their writers together); bulk ingest writes
// and fdatasyncs each batch in the caller, with nothing in between; the read
// is a sequential read(2) of the file in scan-sized chunks.
//
// The file has no framing, so the scan counts bytes and derives records from
// recordBytes, the record size of the ingest.
func RawSubject(recordBytes int) Subject {
	return Subject{
		Name:     RawName,
		Note:     "baseline: plain O_APPEND file, write+fdatasync; one flusher, one write+fdatasync per group of writers",
		Durable:  true,
		Writer:   func(dir string) (Writer, error) { return openRawLog(dir, 0) },
		Ingester: func(dir string) (Ingester, error) { return openRawIngester(dir, 0) },
		Scanner:  func(dir string) (Scanner, error) { return openRawScanner(dir, recordBytes) },
	}
}

// rawRing is the size of the file RawOverwriteSubject writes around.
const rawRing = 64 << 20

// RawOverwriteSubject is the ceiling of the disk: the same loops as
// RawSubject, but writing over a file whose blocks were written (zeroed)
// when it was opened, wrapping around at rawRing bytes, as a database
// recycling its WAL files does. fdatasync then flushes data with no file
// size or extent change to journal. It keeps only the last rawRing bytes,
// so nothing is read back; the zeroing happens at open, outside every
// measurement.
func RawOverwriteSubject() Subject {
	return Subject{
		Name:       RawOverwriteName,
		Note:       "baseline: pre-zeroed 64 MiB file overwritten in a ring, pwrite+fdatasync, same group commit as raw; not read back",
		Durable:    true,
		Overwrites: true,
		Writer:     func(dir string) (Writer, error) { return openRawLog(dir, rawRing) },
		Ingester:   func(dir string) (Ingester, error) { return openRawIngester(dir, rawRing) },
	}
}

// rawFile is the plain file the raw writers append to: with O_APPEND when
// ring is 0, else by pwrite around a pre-zeroed file of ring bytes.
type rawFile struct {
	f    *os.File
	off  int64 // bytes written so far
	ring int64
}

func createRaw(dir string, ring int64) (*rawFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	flags := os.O_CREATE | os.O_RDWR | os.O_TRUNC
	if ring == 0 {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(filepath.Join(dir, rawFileName), flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	r := &rawFile{f: f, ring: ring}
	if ring > 0 {
		if err := r.zero(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return r, nil
}

// zero writes the whole ring once and makes it durable, so that later
// writes overwrite allocated, written blocks.
func (r *rawFile) zero() error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < r.ring; off += int64(len(buf)) {
		if _, err := r.f.WriteAt(buf[:min(int64(len(buf)), r.ring-off)], off); err != nil {
			return fmt.Errorf("raw: zero: %w", err)
		}
	}
	return r.sync()
}

func (r *rawFile) append(data []byte) error {
	if r.ring == 0 {
		if _, err := r.f.Write(data); err != nil {
			return fmt.Errorf("raw: write: %w", err)
		}
		r.off += int64(len(data))
		return nil
	}
	for len(data) > 0 {
		pos := r.off % r.ring
		n := min(int64(len(data)), r.ring-pos)
		if _, err := r.f.WriteAt(data[:n], pos); err != nil {
			return fmt.Errorf("raw: write: %w", err)
		}
		data = data[n:]
		r.off += n
	}
	return nil
}

func (r *rawFile) sync() error {
	if err := bench.Datasync(r.f); err != nil {
		return fmt.Errorf("raw: fdatasync: %w", err)
	}
	return nil
}

func (r *rawFile) close() error { return r.f.Close() }

// rawLog is the group-commit loop, shaped like a log writer's: a writer
// copies its record into the pending buffer and takes the pending
// generation under mu, kicks the flusher and waits. The flusher swaps buffer
// and generation under mu, so one write(2) and one fdatasync cover exactly
// the records of that generation, and closing its channel releases all of
// their writers at once. Writers never make a system call.
type rawLog struct {
	f *rawFile

	mu    sync.Mutex
	buf   []byte
	gen   *rawGen
	spare []byte // the flusher's previous buffer, reused

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type rawGen struct {
	synced chan struct{}
	err    error // set before synced is closed
}

func openRawLog(dir string, ring int64) (*rawLog, error) {
	f, err := createRaw(dir, ring)
	if err != nil {
		return nil, err
	}
	l := &rawLog{
		f:    f,
		gen:  &rawGen{synced: make(chan struct{})},
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go l.flusher()
	return l, nil
}

func (l *rawLog) Write(rec []byte) error {
	l.mu.Lock()
	l.buf = append(l.buf, rec...)
	g := l.gen
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // a round is already due; it will take our record
	}
	<-g.synced
	return g.err
}

func (l *rawLog) flusher() {
	defer close(l.done)
	var sticky error
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			return
		}
		l.mu.Lock()
		data, g := l.buf, l.gen
		l.buf, l.gen = l.spare[:0], &rawGen{synced: make(chan struct{})}
		l.mu.Unlock()
		if sticky == nil && len(data) > 0 {
			sticky = l.f.append(data)
			if sticky == nil {
				sticky = l.f.sync()
			}
		}
		g.err = sticky
		close(g.synced)
		l.spare = data
	}
}

// Close is called once every Write has returned: nothing is pending.
func (l *rawLog) Close() error {
	close(l.stop)
	<-l.done
	return l.f.close()
}

// rawIngester writes and fdatasyncs each batch in the caller.
type rawIngester struct{ f *rawFile }

func openRawIngester(dir string, ring int64) (*rawIngester, error) {
	f, err := createRaw(dir, ring)
	if err != nil {
		return nil, err
	}
	return &rawIngester{f: f}, nil
}

func (r *rawIngester) WriteBatch(data []byte, _ int32) error {
	if err := r.f.append(data); err != nil {
		return err
	}
	return r.f.sync()
}

func (r *rawIngester) Close() error { return r.f.close() }

// rawScanner reads the file sequentially.
type rawScanner struct {
	f           *os.File
	recordBytes int64
}

func openRawScanner(dir string, recordBytes int) (*rawScanner, error) {
	if recordBytes <= 0 {
		return nil, fmt.Errorf("raw: record size %d", recordBytes)
	}
	f, err := os.Open(filepath.Join(dir, rawFileName))
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return &rawScanner{f: f, recordBytes: int64(recordBytes)}, nil
}

func (r *rawScanner) Scan() (records, bytes int64, err error) {
	buf := make([]byte, scanMaxBytes)
	for {
		n, err := r.f.Read(buf)
		bytes += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, bytes, fmt.Errorf("raw: read: %w", err)
		}
	}
	if bytes%r.recordBytes != 0 {
		return 0, bytes, fmt.Errorf("raw: %d bytes is not a whole number of %d-byte records", bytes, r.recordBytes)
	}
	return bytes / r.recordBytes, bytes, nil
}

func (r *rawScanner) Close() error { return r.f.Close() }

// Lends reports that the scan reads into one reused buffer.
func (r *rawScanner) Lends() bool { return true }
