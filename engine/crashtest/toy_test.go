package crashtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// toy is a deliberately small durable engine that exists only to test this
// suite: one log file of CRC-framed batches, a start file written
// atomically, a torn tail cut on open, and Truncate by atomic rewrite. Its
// bugs switch on the suite's findings: a suite that passes a buggy toy is a
// suite that cannot fail.
//
// Frame: crc32c(4) | len(data)(4) | base(8) | records(4) | data; the CRC
// covers everything after itself.
type toy struct {
	bugs toyBugs
	fs   vfs.FS
	dir  string

	mu      sync.Mutex
	f       vfs.File
	size    int64 // bytes of the log file that hold whole frames
	held    []byte
	batches []engine.Batch
	start   int64
	end     int64
	err     error // sticky write or sync error
	closed  bool
}

// toyBugs are the faults a toy can be built with.
type toyBugs struct {
	lieSync    bool // Sync returns nil without an fsync
	holdWrites bool // frames wait in memory until Close; Sync does not write them
	noTailCut  bool // Open takes torn frames as they are: no CRC check, no cut
}

const (
	toyLog      = "log"
	toyStart    = "start"
	toyFrameHdr = 20
)

var toyCRC = crc32.MakeTable(crc32.Castagnoli)

func toyDriver(name string, bugs toyBugs) engine.Driver {
	return engine.Driver{
		Name: name,
		Caps: engine.Capabilities{CustomFS: true, Durable: true},
		Open: func(dir string, opts engine.Options) (engine.LogEngine, error) {
			return openToy(dir, opts, bugs, name)
		},
	}
}

func openToy(dir string, opts engine.Options, bugs toyBugs, name string) (*toy, error) {
	opts = opts.WithDefaults()
	fs := opts.FS
	if err := engine.ClaimDir(fs, dir, name); err != nil {
		return nil, err
	}
	e := &toy{bugs: bugs, fs: fs, dir: dir}
	if err := e.loadStart(); err != nil {
		return nil, err
	}
	data, err := e.readFile(toyLog)
	if err != nil {
		return nil, err
	}
	size := e.scan(data)
	if size != int64(len(data)) && !bugs.noTailCut {
		// A torn tail: keep the whole frames, durably, before appending.
		if err := engine.WriteFileAtomic(fs, fs.PathJoin(dir, toyLog), data[:size]); err != nil {
			return nil, fmt.Errorf("toy: cut torn tail: %w", err)
		}
	}
	if err := e.openLog(size); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *toy) loadStart() error {
	b, err := e.readFile(toyStart)
	switch {
	case err != nil:
		return err
	case len(b) == 0:
		return nil
	case len(b) != 12 || crc32.Checksum(b[:8], toyCRC) != binary.BigEndian.Uint32(b[8:]):
		return fmt.Errorf("toy: start file: %w", engine.ErrCorrupt)
	}
	e.start = int64(binary.BigEndian.Uint64(b))
	return nil
}

// readFile returns a file's contents, or nothing if it does not exist.
func (e *toy) readFile(name string) ([]byte, error) {
	f, err := e.fs.Open(e.fs.PathJoin(e.dir, name))
	if oserror.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// scan loads the whole frames of data above the start and returns how many
// bytes they take.
func (e *toy) scan(data []byte) int64 {
	off := 0
	e.end = e.start
	for len(data)-off >= toyFrameHdr {
		n := int(binary.BigEndian.Uint32(data[off+4:]))
		if e.bugs.noTailCut {
			n = min(n, len(data)-off-toyFrameHdr) // a short frame is taken as it is
		}
		if len(data)-off-toyFrameHdr < n || n == 0 {
			break
		}
		frame := data[off : off+toyFrameHdr+n]
		if !e.bugs.noTailCut && crc32.Checksum(frame[4:], toyCRC) != binary.BigEndian.Uint32(frame) {
			break
		}
		b := engine.Batch{
			BaseOffset: int64(binary.BigEndian.Uint64(frame[8:])),
			Records:    int32(binary.BigEndian.Uint32(frame[16:])),
			Data:       append([]byte(nil), frame[toyFrameHdr:]...),
		}
		if b.NextOffset() > e.start {
			e.batches = append(e.batches, b)
			e.end = b.NextOffset()
		}
		off += len(frame)
	}
	return int64(off)
}

func (e *toy) openLog(size int64) error {
	path := e.fs.PathJoin(e.dir, toyLog)
	_, statErr := e.fs.Stat(path)
	f, err := e.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if oserror.IsNotExist(statErr) {
		if err := engine.SyncDir(e.fs, e.dir); err != nil {
			f.Close()
			return err
		}
	}
	e.f, e.size = f, size
	return nil
}

func frame(b engine.Batch) []byte {
	fr := make([]byte, toyFrameHdr+len(b.Data))
	binary.BigEndian.PutUint32(fr[4:], uint32(len(b.Data)))
	binary.BigEndian.PutUint64(fr[8:], uint64(b.BaseOffset))
	binary.BigEndian.PutUint32(fr[16:], uint32(b.Records))
	copy(fr[toyFrameHdr:], b.Data)
	binary.BigEndian.PutUint32(fr, crc32.Checksum(fr[4:], toyCRC))
	return fr
}

func (e *toy) Append(b engine.Batch) error {
	if b.Records < 1 || len(b.Data) == 0 {
		return engine.ErrEmptyBatch
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return engine.ErrClosed
	case e.err != nil:
		return e.err
	case b.BaseOffset != e.end:
		return engine.ErrNotContiguous
	}
	b.Data = bytes.Clone(b.Data)
	if e.bugs.holdWrites {
		e.held = append(e.held, frame(b)...)
	} else if err := e.write(frame(b)); err != nil {
		return err
	}
	e.batches = append(e.batches, b)
	e.end = b.NextOffset()
	return nil
}

func (e *toy) write(p []byte) error {
	if _, err := e.f.WriteAt(p, e.size); err != nil {
		e.err = fmt.Errorf("toy: write: %w", err)
		return e.err
	}
	e.size += int64(len(p))
	return nil
}

func (e *toy) Sync(ctx context.Context, end int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return engine.ErrClosed
	case e.err != nil:
		return e.err
	case e.bugs.lieSync || e.bugs.holdWrites:
		return ctx.Err()
	}
	return e.syncLocked()
}

func (e *toy) syncLocked() error {
	if len(e.held) > 0 {
		held := e.held
		e.held = nil
		if err := e.write(held); err != nil {
			return err
		}
	}
	if err := e.f.Sync(); err != nil {
		e.err = fmt.Errorf("toy: sync: %w", err)
	}
	return e.err
}

func (e *toy) Read(offset int64, maxBytes int) ([]engine.Batch, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	if offset < e.start || offset > e.end {
		return nil, engine.ErrOffsetOutOfRange
	}
	var out []engine.Batch
	size := 0
	for i := e.find(offset); i < len(e.batches); i++ {
		b := e.batches[i]
		if len(out) > 0 && size+len(b.Data) > maxBytes {
			break
		}
		size += len(b.Data)
		b.Data = bytes.Clone(b.Data)
		out = append(out, b)
	}
	return out, nil
}

func (e *toy) find(offset int64) int {
	return sort.Search(len(e.batches), func(i int) bool { return e.batches[i].NextOffset() > offset })
}

// Truncate rewrites the kept frames atomically, then appends go on after
// them.
func (e *toy) Truncate(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return engine.ErrClosed
	case offset < e.start || offset > e.end:
		return engine.ErrOffsetOutOfRange
	}
	keep := e.batches[:e.find(offset)]
	var data []byte
	for _, b := range keep {
		data = append(data, frame(b)...)
	}
	return e.rewrite(keep, data)
}

func (e *toy) rewrite(keep []engine.Batch, data []byte) error {
	if err := e.syncLocked(); err != nil {
		return err
	}
	f := e.f
	e.f = nil
	if err := f.Close(); err != nil {
		e.err = err
		return err
	}
	if err := engine.WriteFileAtomic(e.fs, e.fs.PathJoin(e.dir, toyLog), data); err != nil {
		e.err = fmt.Errorf("toy: rewrite: %w", err)
		return e.err
	}
	e.batches = keep
	e.end = e.start
	if len(keep) > 0 {
		e.end = keep[len(keep)-1].NextOffset()
	}
	if err := e.openLog(int64(len(data))); err != nil {
		e.err = err
	}
	return e.err
}

func (e *toy) DeleteBefore(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return engine.ErrClosed
	case offset <= e.start:
		return nil
	}
	var b [12]byte
	binary.BigEndian.PutUint64(b[:], uint64(offset))
	binary.BigEndian.PutUint32(b[8:], crc32.Checksum(b[:8], toyCRC))
	if err := engine.WriteFileAtomic(e.fs, e.fs.PathJoin(e.dir, toyStart), b[:]); err != nil {
		e.err = fmt.Errorf("toy: start: %w", err)
		return e.err
	}
	e.start = offset
	if offset >= e.end {
		e.end = offset
		return e.rewrite(nil, nil)
	}
	e.batches = e.batches[e.find(offset):]
	return nil
}

func (e *toy) StartOffset() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.start
}

func (e *toy) EndOffset() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.end
}

func (e *toy) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	err := e.err
	if err == nil {
		err = e.syncLocked()
	}
	if e.f != nil {
		err = errors.Join(err, e.f.Close())
	}
	return err
}
