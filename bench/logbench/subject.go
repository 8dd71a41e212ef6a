// Package logbench holds the engine benchmark workloads: durable append with
// concurrent writers, bulk ingest, cold sequential read and reopen-to-first-
// read, run side by side on every registered engine and on baselines (a plain
// file with a group-commit loop, which is the limit of the disk, and badger
// committing one synced transaction per record), all in one process. It
// is the engines profile of cmd/bench: Run executes a plan and returns
// Results, Report renders results/engines.md.
package logbench

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/minikafka/minikafka/engine"
)

// Writer is what the durable-append workload drives. Write stores one record
// and returns once it is durable; it is called from many goroutines at once.
type Writer interface {
	Write(rec []byte) error
	Close() error
}

// Ingester is what the bulk-ingest workload drives, from one goroutine.
// WriteBatch stores data as one batch of records records and returns once it
// is durable.
type Ingester interface {
	WriteBatch(data []byte, records int32) error
	Close() error
}

// Scanner reads back, in order, everything an Ingester stored, checking it
// as it goes, and reports how many records and payload bytes it saw.
type Scanner interface {
	Scan() (records, bytes int64, err error)
	Close() error
}

// Subject is one thing measured: an engine from the registry or a baseline.
// A nil constructor means the subject does not take part in that workload.
type Subject struct {
	Name string
	// Note says what the subject is, for the report.
	Note string
	// Durable subjects are closed after ingest and read back after a reopen;
	// the others are read back while still open, and their Ingester must
	// also be a Scanner.
	Durable bool
	// Overwrites marks a subject that keeps only the tail of what it is
	// given (a ring): it has no space figures and nothing to read back.
	Overwrites bool

	Writer   func(dir string) (Writer, error)
	Ingester func(dir string) (Ingester, error)
	Scanner  func(dir string) (Scanner, error)
	// Reopen opens what an Ingester left in dir and returns how long it took
	// until the first record was read, then closes it (untimed).
	Reopen func(dir string) (time.Duration, error)
	// Engine opens what an Ingester left in dir as the engine it is, for
	// the workloads that truncate and trim it; nil for the baselines. A
	// subject with it is also killed and restarted (see ChildCmd).
	Engine func(dir string) (engine.LogEngine, error)
}

// EngineSubject measures the engine registered under name, under
// SyncAlways with default options.
func EngineSubject(name string) (Subject, error) {
	d, err := engine.Lookup(name)
	if err != nil {
		return Subject{}, err
	}
	open := func(dir string) (*engineLog, error) {
		e, err := engine.Open(name, dir, engine.Options{Sync: engine.SyncAlways})
		if err != nil {
			return nil, err
		}
		return &engineLog{e: e, next: e.EndOffset()}, nil
	}
	s := Subject{
		Name:     name,
		Note:     "engine, sync=always, default options",
		Durable:  d.Caps.Durable,
		Writer:   func(dir string) (Writer, error) { return open(dir) },
		Ingester: func(dir string) (Ingester, error) { return open(dir) },
		Scanner:  func(dir string) (Scanner, error) { return open(dir) },
		Reopen:   func(dir string) (time.Duration, error) { return reopenFirstRead(name, dir) },
		Engine: func(dir string) (engine.LogEngine, error) {
			return engine.Open(name, dir, engine.Options{Sync: engine.SyncAlways})
		},
	}
	if !s.Durable {
		s.Note = "engine, not durable: read back while open, no reopen"
		s.Scanner, s.Reopen, s.Engine = nil, nil, nil
	}
	return s, nil
}

// engineLog drives a LogEngine the way the broker's write path does: offsets
// are assigned and the batch appended under one lock, and the durability
// wait happens outside it so that concurrent writers share fsyncs.
type engineLog struct {
	e    engine.LogEngine
	mu   sync.Mutex
	next int64
	// retain, when positive, is the roll size of a log trimmed as it is
	// written (SegmentRetainedSubject); written counts the bytes appended,
	// markBytes what written was at the last trim.
	retain, written, markBytes int64
}

func (l *engineLog) append(data []byte, records int32) (end int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := engine.Batch{BaseOffset: l.next, Records: records, Data: data}
	if err := l.e.Append(b); err != nil {
		return 0, fmt.Errorf("append at %d: %w", l.next, err)
	}
	l.next = b.NextOffset()
	if err := l.retainAfter(len(data)); err != nil {
		return 0, err
	}
	return l.next, nil
}

func (l *engineLog) Write(rec []byte) error { return l.WriteBatch(rec, 1) }

func (l *engineLog) WriteBatch(data []byte, records int32) error {
	end, err := l.append(data, records)
	if err != nil {
		return err
	}
	if err := l.e.Sync(context.Background(), end); err != nil {
		return fmt.Errorf("sync to %d: %w", end, err)
	}
	return nil
}

// scanMaxBytes is the read size of a sequential scan, for engines and the
// raw file alike.
const scanMaxBytes = 1 << 20

// Scan reads the whole log and checks that batches are contiguous and that
// each carries the stamp the ingest workload wrote (its base offset).
func (l *engineLog) Scan() (records, bytes int64, err error) {
	off, end := l.e.StartOffset(), l.e.EndOffset()
	// An engine that can read into a lent buffer scans as the raw baseline
	// does, reusing one buffer; the others allocate one per Read.
	into, reuses := l.e.(engine.BufferReader)
	var buf []byte
	for off < end {
		var bs []engine.Batch
		var err error
		if reuses {
			bs, buf, err = into.ReadInto(buf, off, scanMaxBytes)
		} else {
			bs, err = l.e.Read(off, scanMaxBytes)
		}
		if err != nil {
			return records, bytes, fmt.Errorf("read at %d: %w", off, err)
		}
		if len(bs) == 0 {
			return records, bytes, fmt.Errorf("read at %d below end %d returned nothing", off, end)
		}
		for _, b := range bs {
			if b.BaseOffset != off {
				return records, bytes, fmt.Errorf("read at %d: got batch at %d", off, b.BaseOffset)
			}
			if got, ok := stampOf(b.Data); ok && got != b.BaseOffset {
				return records, bytes, fmt.Errorf("batch at %d carries stamp %d", off, got)
			}
			records += int64(b.Records)
			bytes += int64(len(b.Data))
			off = b.NextOffset()
		}
	}
	return records, bytes, nil
}

func (l *engineLog) Close() error { return l.e.Close() }

// Lends reports whether Scan reads into one lent buffer.
func (l *engineLog) Lends() bool {
	_, ok := l.e.(engine.BufferReader)
	return ok
}

func reopenFirstRead(name, dir string) (time.Duration, error) {
	start := time.Now()
	e, err := engine.Open(name, dir, engine.Options{Sync: engine.SyncAlways})
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	bs, err := e.Read(e.StartOffset(), 1)
	took := time.Since(start)
	cerr := e.Close()
	switch {
	case err != nil:
		return 0, fmt.Errorf("first read after reopen: %w", err)
	case len(bs) == 0:
		return 0, fmt.Errorf("first read after reopen: log is empty")
	case cerr != nil:
		return 0, fmt.Errorf("close after reopen: %w", cerr)
	}
	return took, nil
}

// stampBytes is the size of the stamp the ingest workload writes at the
// front of each batch: the batch's base offset, so a scan can tell a
// misplaced batch from the right one.
const stampBytes = 8

func stamp(data []byte, base int64) {
	binary.BigEndian.PutUint64(data, uint64(base))
}

func stampOf(data []byte) (int64, bool) {
	if len(data) < stampBytes {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(data)), true
}
