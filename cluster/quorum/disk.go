package quorum

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/minikafka/minikafka/engine"
)

// disk is a Node's durable state: the raft log in a LogEngine (offset i =
// raft index i, one single-record batch per entry) and the HARDSTATE and
// SNAPSHOT files beside it. Every method is durable when it returns.
type disk struct {
	fs  vfs.FS
	dir string
	log engine.LogEngine
}

func (d *disk) path(name string) string { return d.fs.PathJoin(d.dir, name) }

// appendEntries writes ents (consecutive, as raft hands them out) at their
// indexes, first dropping whatever the log holds from ents[0].Index on: a new
// leader overwriting an uncommitted tail.
func (d *disk) appendEntries(ents []raftpb.Entry) error {
	first := int64(ents[0].Index)
	end := d.log.EndOffset()
	switch {
	case first > end:
		return fmt.Errorf("quorum: raft entries start at %d, past the log end %d", first, end)
	case first < end:
		if err := d.log.Truncate(first); err != nil {
			return fmt.Errorf("quorum: truncate the raft log to %d: %w", first, err)
		}
	}
	for i := range ents {
		data, err := ents[i].Marshal()
		if err != nil {
			return fmt.Errorf("quorum: marshal entry %d: %w", ents[i].Index, err)
		}
		b := engine.Batch{BaseOffset: int64(ents[i].Index), Records: 1, Data: data}
		if err := d.log.Append(b); err != nil {
			return fmt.Errorf("quorum: append entry %d: %w", ents[i].Index, err)
		}
	}
	if err := d.log.Sync(context.Background(), d.log.EndOffset()); err != nil {
		return fmt.Errorf("quorum: sync the raft log: %w", err)
	}
	return nil
}

// readEntries returns every entry in the log, checking that each sits at
// its own index.
func (d *disk) readEntries() ([]raftpb.Entry, error) {
	var ents []raftpb.Entry
	for off, end := d.log.StartOffset(), d.log.EndOffset(); off < end; {
		batches, err := d.log.Read(off, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("quorum: read the raft log at %d: %w", off, err)
		}
		if len(batches) == 0 {
			return nil, fmt.Errorf("%w: the raft log ends at %d, not %d", ErrCorrupt, off, end)
		}
		for _, b := range batches {
			var e raftpb.Entry
			if err := e.Unmarshal(b.Data); err != nil {
				return nil, fmt.Errorf("%w: raft log offset %d: %v", ErrCorrupt, b.BaseOffset, err)
			}
			if b.Records != 1 || int64(e.Index) != b.BaseOffset || b.BaseOffset != off {
				return nil, fmt.Errorf("%w: raft log offset %d (want %d, %d records) holds entry %d",
					ErrCorrupt, b.BaseOffset, off, b.Records, e.Index)
			}
			ents = append(ents, e)
			off++
		}
	}
	return ents, nil
}

// resetLog empties the log and makes it start at start: a snapshot from the
// leader replaces everything we had.
func (d *disk) resetLog(start int64) error {
	if s, e := d.log.StartOffset(), d.log.EndOffset(); e > s {
		if err := d.log.Truncate(s); err != nil {
			return fmt.Errorf("quorum: empty the raft log: %w", err)
		}
	}
	if err := d.log.DeleteBefore(start); err != nil {
		return fmt.Errorf("quorum: start the raft log at %d: %w", start, err)
	}
	return nil
}

func (d *disk) saveHardState(hs raftpb.HardState) error {
	b, err := hs.Marshal()
	if err != nil {
		return fmt.Errorf("quorum: marshal hard state: %w", err)
	}
	return writeFile(d.fs, d.path(hardStateFile), hardStateMagic, b)
}

func (d *disk) loadHardState() (raftpb.HardState, error) {
	var hs raftpb.HardState
	b, ok, err := readFile(d.fs, d.path(hardStateFile), hardStateMagic)
	if err != nil || !ok {
		return hs, err
	}
	if err := hs.Unmarshal(b); err != nil {
		return hs, fmt.Errorf("%w: %s: %v", ErrCorrupt, hardStateFile, err)
	}
	return hs, nil
}

func (d *disk) saveSnapshot(s raftpb.Snapshot) error {
	b, err := s.Marshal()
	if err != nil {
		return fmt.Errorf("quorum: marshal snapshot: %w", err)
	}
	return writeFile(d.fs, d.path(snapshotFile), snapshotMagic, b)
}

// loadSnapshot returns the snapshot on disk, or an empty one.
func (d *disk) loadSnapshot() (raftpb.Snapshot, error) {
	var s raftpb.Snapshot
	b, ok, err := readFile(d.fs, d.path(snapshotFile), snapshotMagic)
	if err != nil || !ok {
		return s, err
	}
	if err := s.Unmarshal(b); err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrCorrupt, snapshotFile, err)
	}
	return s, nil
}

func (d *disk) saveMeta(m meta) error {
	return writeFile(d.fs, d.path(metaFile), metaMagic, m.encode())
}

func (d *disk) loadMeta() (meta, bool, error) {
	b, ok, err := readFile(d.fs, d.path(metaFile), metaMagic)
	if err != nil || !ok {
		return meta{}, ok, err
	}
	m, err := decodeMeta(b)
	return m, err == nil, err
}
