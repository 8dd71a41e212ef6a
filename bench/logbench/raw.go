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

// rawFile is the file the raw baseline writes in its directory.
const rawFile = "raw.log"

// RawSubject is the limit of the disk: a plain O_APPEND file. Durable
// append goes through a group-commit loop (one flusher goroutine, fdatasync,
// every waiter queued before it released together); bulk ingest writes and
// fdatasyncs each batch in the caller, with nothing in between; the read is a
// sequential read(2) of the file in scan-sized chunks.
//
// The file has no framing, so the scan counts bytes and derives records from
// recordBytes, the record size of the ingest.
func RawSubject(recordBytes int) Subject {
	return Subject{
		Name:     RawName,
		Note:     "baseline: plain O_APPEND file, fdatasync; group commit for concurrent writers",
		Durable:  true,
		Writer:   func(dir string) (Writer, error) { return openRawLog(dir) },
		Ingester: func(dir string) (Ingester, error) { return openRawIngester(dir) },
		Scanner:  func(dir string) (Scanner, error) { return openRawScanner(dir, recordBytes) },
	}
}

func createRaw(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rawFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return f, nil
}

// rawLog is the group-commit loop. A writer appends under mu, then takes the
// current generation and kicks the flusher. The flusher swaps in a new
// generation before each fdatasync, so that fdatasync covers every write made
// before any waiter took the old generation; closing the old generation's
// channel releases all its waiters at once.
type rawLog struct {
	f  *os.File
	mu sync.Mutex // serialises writes, as a partition lock would

	gmu  sync.Mutex
	gen  *rawGen
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
	_, err := l.f.Write(rec)
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("raw: write: %w", err)
	}
	l.gmu.Lock()
	g := l.gen
	l.gmu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // a round is already due and will start after we took g
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
		l.gmu.Lock()
		g := l.gen
		l.gen = &rawGen{synced: make(chan struct{})}
		l.gmu.Unlock()
		if sticky == nil {
			if err := bench.Datasync(l.f); err != nil {
				sticky = fmt.Errorf("raw: fdatasync: %w", err)
			}
		}
		g.err = sticky
		close(g.synced)
	}
}

func (l *rawLog) Close() error {
	close(l.stop)
	<-l.done
	err := bench.Datasync(l.f)
	return errors.Join(err, l.f.Close())
}

// rawIngester writes and fdatasyncs each batch in the caller.
type rawIngester struct{ f *os.File }

func openRawIngester(dir string) (*rawIngester, error) {
	f, err := createRaw(dir)
	if err != nil {
		return nil, err
	}
	return &rawIngester{f: f}, nil
}

func (r *rawIngester) WriteBatch(data []byte, _ int32) error {
	if _, err := r.f.Write(data); err != nil {
		return fmt.Errorf("raw: write: %w", err)
	}
	if err := bench.Datasync(r.f); err != nil {
		return fmt.Errorf("raw: fdatasync: %w", err)
	}
	return nil
}

func (r *rawIngester) Close() error { return r.f.Close() }

// rawScanner reads the file sequentially.
type rawScanner struct {
	f           *os.File
	recordBytes int64
}

func openRawScanner(dir string, recordBytes int) (*rawScanner, error) {
	if recordBytes <= 0 {
		return nil, fmt.Errorf("raw: record size %d", recordBytes)
	}
	f, err := os.Open(filepath.Join(dir, rawFile))
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
