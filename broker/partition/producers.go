package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/producer"
	"github.com/minikafka/minikafka/engine"
)

// Producer snapshots are files named producer-<offset>.snapshot beside the
// log, the offset zero-padded so names sort by offset. A few are kept: under
// the interval and never sync policies the newest one can be ahead of what a
// crash leaves in the log, and then an older one still saves the full scan.
const (
	snapshotPrefix = "producer-"
	snapshotSuffix = ".snapshot"
	snapshotsKept  = 3
	scanChunkBytes = 1 << 20
)

func snapshotName(offset int64) string {
	return fmt.Sprintf("%s%020d%s", snapshotPrefix, offset, snapshotSuffix)
}

// snapshotOffsets lists the snapshot files' offsets, newest first.
func (p *Partition) snapshotOffsets() ([]int64, error) {
	names, err := p.fs.List(p.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.dir, err)
	}
	return snapshotOffsetsIn(names), nil
}

// snapshotOffsetsIn is snapshotOffsets of a listing of the partition's
// directory.
func snapshotOffsetsIn(names []string) []int64 {
	var offs []int64
	for _, n := range names {
		if !strings.HasPrefix(n, snapshotPrefix) || !strings.HasSuffix(n, snapshotSuffix) {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(n, snapshotPrefix), snapshotSuffix), 10, 64)
		if err != nil || off < 0 {
			continue
		}
		offs = append(offs, off)
	}
	slices.Sort(offs)
	slices.Reverse(offs)
	return offs
}

// restoreProducers rebuilds the producer state: the newest snapshot that is
// not past the log end and reads cleanly, then every batch after it. A
// snapshot past the log end describes batches a crash took back; it is
// deleted so it can never be mistaken for the state of batches written
// later at the same offsets. names is the partition directory's listing.
func (p *Partition) restoreProducers(names []string) error {
	start, end := p.log.StartOffset(), p.log.EndOffset()
	offs := snapshotOffsetsIn(names)
	st, from, used := producer.NewState(), start, int64(-1)
	removed := false
	for _, off := range offs {
		path := p.fs.PathJoin(p.dir, snapshotName(off))
		if off > end {
			p.logger.Warn("producer snapshot past the log end; removing it", "snapshot", off, "end", end)
			if err := p.fs.Remove(path); err != nil {
				return fmt.Errorf("remove stale snapshot: %w", err)
			}
			removed = true
			continue
		}
		s, _, err := producer.ReadSnapshot(p.fs, path)
		if errors.Is(err, producer.ErrBadSnapshot) {
			p.logger.Warn("damaged producer snapshot; trying an older one", "snapshot", off, "err", err)
			continue
		}
		if err != nil {
			return err
		}
		st, from, used = s, max(off, start), off
		break
	}
	if removed {
		// Durably, before the log takes a batch past the cut: a snapshot
		// that came back after a crash, its offset below a log end that
		// new batches have passed, would be read as the state of that log,
		// and an idempotent producer's retry answered with the offsets of
		// a batch the log no longer holds (a lost write the simulator
		// found).
		if err := engine.SyncDir(p.fs, p.dir); err != nil {
			return fmt.Errorf("remove stale snapshot: %w", err)
		}
	}
	if err := scanProducers(p, st, from, end); err != nil {
		return err
	}
	p.producers = st
	p.txnSeen.Store(st.HasAborted() || st.Unstable() > 0)
	p.unstable.Store(int64(st.Unstable()))
	p.snapSaved.Store(-1)
	if used == end {
		// Read from a snapshot at the log end, nothing replayed: the file
		// holds this very state (close need not write it again).
		p.snapSaved.Store(end)
	}
	return nil
}

// scanProducers replays the headers of the batches in [from, end) into st.
func scanProducers(p *Partition, st *producer.State, from, end int64) error {
	n, nowMs := 0, p.clock.Now().UnixMilli()
	for off := from; off < end; {
		bs, err := p.log.Read(off, scanChunkBytes)
		if err != nil {
			return fmt.Errorf("rebuild producer state at offset %d: %w", off, err)
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			if b.BaseOffset < off {
				continue // the log start lies inside this batch
			}
			h, err := batch.ParseHeader(b.Data)
			if err == nil {
				err = recordBatch(st, b.Data, h, b.BaseOffset, nowMs)
			}
			if err != nil {
				return fmt.Errorf("rebuild producer state: batch at %d: %w", b.BaseOffset, err)
			}
			n++
		}
		off = bs[len(bs)-1].NextOffset()
	}
	if n > 0 {
		p.logger.Info("rebuilt producer state from the log", "from", from, "end", end, "batches", n, "producers", st.Len())
	}
	return nil
}

// recordBatch records stored batch b, whose header is h, at offset base in
// st: a marker (control batch) ends a transaction, any other batch is a
// producer's.
func recordBatch(st *producer.State, b []byte, h batch.Header, base, nowMs int64) error {
	if !h.Attributes.Control() {
		st.Record(h, base, nowMs)
		return nil
	}
	m, err := batch.ParseMarker(b)
	if err != nil {
		return err
	}
	st.RecordMarker(h, m, base, nowMs)
	return nil
}

// writeSnapshot saves st as of offset and prunes old snapshots.
func (p *Partition) writeSnapshot(st *producer.State, offset int64) error {
	if err := producer.WriteSnapshot(p.fs, p.fs.PathJoin(p.dir, snapshotName(offset)), st, offset); err != nil {
		return err
	}
	offs, err := p.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, off := range offs[min(len(offs), snapshotsKept):] {
		if err := p.fs.Remove(p.fs.PathJoin(p.dir, snapshotName(off))); err != nil {
			return fmt.Errorf("prune producer snapshot %d: %w", off, err)
		}
	}
	return nil
}

// maybeSnapshot writes a producer snapshot once enough was appended since
// the last one. The state is copied under the append lock together with the
// log end it describes; the log is synced to that end before the file is
// written, so under SyncAlways a snapshot never runs ahead of the log.
func (p *Partition) maybeSnapshot(ctx context.Context) {
	p.mu.Lock()
	if p.sinceSnap < p.snapEvery || p.closed {
		p.mu.Unlock()
		return
	}
	p.producers.Expire(p.clock.Now().UnixMilli(), producerExpiryMs)
	p.producers.PruneAborted(p.log.StartOffset())
	st, end, gen := p.producers.Clone(), p.log.EndOffset(), p.rebuilds
	p.sinceSnap = 0
	p.mu.Unlock()
	if err := p.log.Sync(ctx, end); err != nil {
		return // the loop reports sync failures
	}
	if err := p.writeSnapshot(st, end); err != nil {
		p.logger.Warn("producer snapshot failed; a restart will scan more of the log", "err", err)
		return
	}
	p.mu.Lock()
	if p.rebuilds == gen {
		p.snapSaved.Store(end)
	}
	p.mu.Unlock()
}

// snapshotCoveringLocked writes a producer snapshot at the log end now,
// unless one on disk is already at or past start: it runs before the log
// start moves to start. The producers' state outlives the batches it was
// read from, and a restart rebuilds it from the newest snapshot and the log
// after it; a start that passed every snapshot would take the state with
// the batches, and an idempotent producer's retry of a deleted batch would
// be appended again as new (a duplicate the simulator found: a crash came
// before the snapshot the move had only asked for). Kafka keeps one at every segment roll for the same reason. The log
// is not synced first: the move must not wait on the tail's fsync (a slow
// disk would hold every append behind the lock), and a snapshot that a
// power loss leaves past the log's end is dropped by the next open, which
// then rebuilds from the log as before. The caller holds mu.
func (p *Partition) snapshotCoveringLocked(start int64) error {
	if p.snapSaved.Load() >= start || p.closed {
		return nil
	}
	end := p.log.EndOffset()
	if err := p.writeSnapshot(p.producers, end); err != nil {
		return p.storageErr("producer snapshot", err)
	}
	p.snapSaved.Store(end)
	p.sinceSnap = 0
	return nil
}

// snapshotCovering is snapshotCoveringLocked for a caller without mu.
func (p *Partition) snapshotCovering(start int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshotCoveringLocked(start)
}
