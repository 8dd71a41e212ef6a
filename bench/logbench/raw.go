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

// RawName names the raw-disk baseline.
const RawName = "raw"

// rawFileName is the file the raw baseline writes in its directory.
const rawFileName = "raw.log"

// RawSubject is the limit of the disk: a plain file, preallocated ahead of
// the writes as a WAL is (see rawChunk). Durable
// append goes through a group-commit loop (one flusher goroutine that does
// one write and one fdatasync for every record queued before it, and
// releases their writers together); bulk ingest writes and fdatasyncs each
// batch in the caller, with nothing in between; the read is a sequential
// read(2) of the file in scan-sized chunks.
//
// The file has no framing, so the scan counts bytes and derives records from
// recordBytes, the record size of the ingest.
func RawSubject(recordBytes int) Subject {
	return Subject{
		Name:     RawName,
		Note:     "baseline: plain file preallocated in 64 MiB chunks, pwrite+fdatasync; one flusher, one write+fdatasync per group of writers",
		Durable:  true,
		Writer:   func(dir string) (Writer, error) { return openRawLog(dir) },
		Ingester: func(dir string) (Ingester, error) { return openRawIngester(dir) },
		Scanner:  func(dir string) (Scanner, error) { return openRawScanner(dir, recordBytes) },
	}
}

// rawChunk is how far ahead the raw file is preallocated. Like a database's
// WAL, the file is grown in chunks with fallocate and written with pwrite, so
// that an fdatasync flushes data without a size change to journal: the
// cheapest durable append this filesystem offers.
const rawChunk = 64 << 20

// rawFile is the plain file both raw writers append to.
type rawFile struct {
	f         *os.File
	off       int64 // end of the data written
	allocated int64
}

func createRaw(dir string) (*rawFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rawFileName), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return &rawFile{f: f}, nil
}

func (r *rawFile) append(data []byte) error {
	if end := r.off + int64(len(data)); end > r.allocated {
		n := max(rawChunk, end-r.allocated)
		if err := bench.Preallocate(r.f, r.allocated, n); err != nil {
			return fmt.Errorf("raw: preallocate: %w", err)
		}
		r.allocated += n
	}
	if _, err := r.f.WriteAt(data, r.off); err != nil {
		return fmt.Errorf("raw: write: %w", err)
	}
	r.off += int64(len(data))
	return nil
}

func (r *rawFile) sync() error {
	if err := bench.Datasync(r.f); err != nil {
		return fmt.Errorf("raw: fdatasync: %w", err)
	}
	return nil
}

// close cuts the preallocated tail, so that the file holds the data alone.
func (r *rawFile) close() error {
	err := r.f.Truncate(r.off)
	if err == nil {
		err = r.sync()
	}
	return errors.Join(err, r.f.Close())
}

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

func openRawLog(dir string) (*rawLog, error) {
	f, err := createRaw(dir)
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

func openRawIngester(dir string) (*rawIngester, error) {
	f, err := createRaw(dir)
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
