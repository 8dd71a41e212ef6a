package producer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/minikafka/minikafka/engine"
)

// Snapshot file format, big endian. The format constants never change; a
// new layout gets a new version.
//
//	+-------+---------+--------+-----------------+--------+-----------+
//	| magic | version | crc32c | offset          | count  | entries   |
//	| "MKPS"| u16 = 2 | u32    | i64             | u32    | ...       |
//	+-------+---------+--------+-----------------+--------+-----------+
//	then, in version 2: ended count u32 | ended txns | aborted count u32 | aborted txns
//
//	crc32c (Castagnoli) covers every byte after it.
//	offset: the log offset the state is as of: every batch below it is
//	        reflected, none at or above it.
//	entry:  id i64 | epoch i16 | lastActiveMs i64 | n u8 (<= 5) |
//	        n x (firstSeq i32 | lastSeq i32 | baseOffset i64 | lastOffset i64)
//	        then, in version 2: txnFirst i64 | coordinatorEpoch i32
//	txn:    producerId i64 | first i64 | last i64
//
// Version 1 (before transactions) is still read: no transaction is open,
// ended or aborted in it.
const (
	snapshotMagic   = "MKPS"
	snapshotVersion = 2
	snapshotHeader  = 4 + 2 + 4 + 8 + 4
	entryFixed      = 8 + 2 + 8 + 1
	entryTxnSize    = 8 + 4
	batchInfoSize   = 4 + 4 + 8 + 8
	txnSize         = 8 + 8 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNoSnapshot: there is no snapshot file; rebuild the state from the log.
var ErrNoSnapshot = errors.New("producer: no snapshot")

// ErrBadSnapshot: the snapshot file is damaged or of an unknown version. It
// is safe to ignore it and rebuild the state from the whole log.
var ErrBadSnapshot = errors.New("producer: bad snapshot")

// MarshalSnapshot encodes the state as of log offset offset.
func (s *State) MarshalSnapshot(offset int64) []byte {
	be := binary.BigEndian
	b := make([]byte, 0, snapshotHeader+len(s.producers)*(entryFixed+Window*batchInfoSize+entryTxnSize)+
		(len(s.ended)+len(s.aborted))*txnSize+8)
	b = append(b, snapshotMagic...)
	b = be.AppendUint16(b, snapshotVersion)
	b = be.AppendUint32(b, 0) // crc, filled in below
	b = be.AppendUint64(b, uint64(offset))
	b = be.AppendUint32(b, uint32(len(s.producers)))
	for _, e := range s.Entries() {
		b = be.AppendUint64(b, uint64(e.ID))
		b = be.AppendUint16(b, uint16(e.Epoch))
		b = be.AppendUint64(b, uint64(e.LastActiveMs))
		b = append(b, byte(len(e.Batches)))
		for _, bi := range e.Batches {
			b = be.AppendUint32(b, uint32(bi.FirstSeq))
			b = be.AppendUint32(b, uint32(bi.LastSeq))
			b = be.AppendUint64(b, uint64(bi.BaseOffset))
			b = be.AppendUint64(b, uint64(bi.LastOffset))
		}
		b = be.AppendUint64(b, uint64(e.TxnFirst))
		b = be.AppendUint32(b, uint32(e.CoordinatorEpoch))
	}
	for _, txns := range [][]Txn{s.ended, s.aborted} {
		b = be.AppendUint32(b, uint32(len(txns)))
		for _, t := range txns {
			b = be.AppendUint64(b, uint64(t.ProducerID))
			b = be.AppendUint64(b, uint64(t.First))
			b = be.AppendUint64(b, uint64(t.Last))
		}
	}
	be.PutUint32(b[6:], crc32.Checksum(b[10:], castagnoli))
	return b
}

// UnmarshalSnapshot decodes a snapshot, returning the state and the offset
// it is as of. Any damage returns ErrBadSnapshot.
func UnmarshalSnapshot(b []byte) (*State, int64, error) {
	bad := func(format string, args ...any) (*State, int64, error) {
		return nil, 0, fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	if len(b) < snapshotHeader || string(b[:4]) != snapshotMagic {
		return bad("%d bytes without the %s header", len(b), snapshotMagic)
	}
	version := be.Uint16(b[4:])
	if version != 1 && version != snapshotVersion {
		return bad("version %d", version)
	}
	if got, want := crc32.Checksum(b[10:], castagnoli), be.Uint32(b[6:]); got != want {
		return bad("crc %08x, computed %08x", want, got)
	}
	offset := int64(be.Uint64(b[10:]))
	count := be.Uint32(b[18:])
	rest := b[snapshotHeader:]
	if uint64(count)*entryFixed > uint64(len(rest)) {
		return bad("%d entries in %d bytes", count, len(rest))
	}
	s := NewState()
	for i := uint32(0); i < count; i++ {
		if len(rest) < entryFixed {
			return bad("entry %d truncated", i)
		}
		e := &Entry{ID: int64(be.Uint64(rest)), Epoch: int16(be.Uint16(rest[8:])), LastActiveMs: int64(be.Uint64(rest[10:])),
			TxnFirst: -1, CoordinatorEpoch: -1}
		n := int(rest[18])
		rest = rest[entryFixed:]
		if n > Window || len(rest) < n*batchInfoSize {
			return bad("entry %d: %d batches in %d bytes", i, n, len(rest))
		}
		for j := 0; j < n; j++ {
			e.Batches = append(e.Batches, BatchInfo{
				FirstSeq: int32(be.Uint32(rest)), LastSeq: int32(be.Uint32(rest[4:])),
				BaseOffset: int64(be.Uint64(rest[8:])), LastOffset: int64(be.Uint64(rest[16:])),
			})
			rest = rest[batchInfoSize:]
		}
		if version >= 2 {
			if len(rest) < entryTxnSize {
				return bad("entry %d: transaction truncated", i)
			}
			e.TxnFirst, e.CoordinatorEpoch = int64(be.Uint64(rest)), int32(be.Uint32(rest[8:]))
			rest = rest[entryTxnSize:]
			if e.TxnFirst >= 0 {
				s.open[e.ID] = e.TxnFirst
			}
		}
		if _, dup := s.producers[e.ID]; dup {
			return bad("producer %d twice", e.ID)
		}
		s.producers[e.ID] = e
	}
	if version >= 2 {
		for _, txns := range []*[]Txn{&s.ended, &s.aborted} {
			if len(rest) < 4 {
				return bad("transactions truncated")
			}
			n := be.Uint32(rest)
			rest = rest[4:]
			if uint64(n)*txnSize > uint64(len(rest)) {
				return bad("%d transactions in %d bytes", n, len(rest))
			}
			for range n {
				*txns = append(*txns, Txn{ProducerID: int64(be.Uint64(rest)), First: int64(be.Uint64(rest[8:])), Last: int64(be.Uint64(rest[16:]))})
				rest = rest[txnSize:]
			}
		}
	}
	if len(rest) != 0 {
		return bad("%d trailing bytes", len(rest))
	}
	return s, offset, nil
}

// WriteSnapshot writes the state as of offset to path atomically (see
// engine.WriteFileAtomic): after a crash the file holds the old snapshot or
// the new one. The caller makes sure offset is durable in the log first, or
// accepts that a snapshot past the recovered log end is discarded on open.
func WriteSnapshot(fs vfs.FS, path string, s *State, offset int64) error {
	if err := engine.WriteFileAtomic(fs, path, s.MarshalSnapshot(offset)); err != nil {
		return fmt.Errorf("producer snapshot: %w", err)
	}
	return nil
}

// ReadSnapshot reads the snapshot at path: ErrNoSnapshot when there is none,
// ErrBadSnapshot when it is damaged, another error when it cannot be read.
func ReadSnapshot(fs vfs.FS, path string) (*State, int64, error) {
	b, err := readFile(fs, path)
	if oserror.IsNotExist(err) {
		return nil, 0, fmt.Errorf("%s: %w", path, ErrNoSnapshot)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("producer snapshot: %w", err)
	}
	s, off, err := UnmarshalSnapshot(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return s, off, nil
}

func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return slices.Clip(b), nil
}
