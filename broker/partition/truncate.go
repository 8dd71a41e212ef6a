package partition

import (
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/engine"
	"github.com/minikafka/minikafka/replication"
)

// truncateLocked drops the log from offset on, as a follower does where its
// log parts from its leader's (a diverging epoch): the engine's suffix, and
// consistently with it the producer state (rebuilt from the newest snapshot
// at or below the cut and the batches after it), the time index, the high
// watermark when it was above the cut. The epoch cache is the Follower's to
// cut (it did). The caller holds mu and repMu.
func (p *Partition) truncateLocked(offset int64) error {
	if offset >= p.log.EndOffset() {
		return nil
	}
	if hw := p.wm.get(); offset < hw {
		// The leader says this replica holds records above its committed
		// prefix that the leader lacks: the local HW ran ahead of the log
		// the cluster kept (it can, under sync=never after a power loss).
		p.logger.Warn("truncating below the high watermark", "hw", hw, "to", offset)
		p.wm.lower(offset)
	}
	if err := p.log.Truncate(offset); err != nil {
		return p.writeFailed("truncate", err)
	}
	// What was durable past the cut is gone: the durable end follows the
	// log end down (a later role reads it).
	p.durable.lower(p.log.EndOffset())
	p.ti.reset()
	p.logger.Info("log truncated to where it parts from the leader's", "offset", offset)
	return p.rebuildProducers()
}

// resetLocked empties the log and starts it at start, for a follower whose
// log ends below its leader's log start. The caller holds mu and repMu.
func (p *Partition) resetLocked(start int64) error {
	if start <= p.log.EndOffset() {
		return p.truncateLocked(start)
	}
	if err := p.log.DeleteBefore(start); err != nil {
		return p.writeFailed("reset log", err)
	}
	p.ti.reset()
	p.durable.advance(start)
	p.wm.advance(start)
	p.logger.Info("log reset to start at the leader's log start", "start", start)
	return p.rebuildProducers()
}

// rebuildProducers drops the producer snapshots past the log end and
// rebuilds the state from the newest one left and the log after it.
func (p *Partition) rebuildProducers() error {
	p.rebuilds++
	names, err := p.fs.List(p.dir)
	if err != nil {
		return p.wrap(fmt.Errorf("rebuild producer state after a truncation: list %s: %w", p.dir, err))
	}
	if err := p.restoreProducers(names); err != nil {
		return p.wrap(fmt.Errorf("rebuild producer state after a truncation: %w", err))
	}
	return nil
}

// loadHW is the partition's high watermark in the checkpoint saved,
// clamped to the log, and notes the value it holds.
func (p *Partition) loadHW(end int64, saved map[Key]int64) int64 {
	hw, found := saved[p.key]
	if found {
		p.savedHW = hw // what the file holds: it need not be written again
	}
	if found && hw > end {
		// Committed records the log no longer holds: under sync=interval or
		// never a power loss takes what was not synced, committed or not.
		p.shortOfHW = hw - end
		p.logger.Warn("the log came back shorter than its high watermark: committed records were lost",
			"partition", p.key.String(), "hw", hw, "end", end, "missing", hw-end)
	}
	return max(min(hw, end), p.log.StartOffset())
}

// loadEpochs reads the leader epoch cache, or rebuilds it from the batches'
// partition leader epochs when its checkpoint is missing or damaged, and
// cuts it to the log (a crash may have taken a tail the checkpoint saw).
// names is the partition directory's listing: a checkpoint it does not
// show is not looked for.
func (p *Partition) loadEpochs(names []string) error {
	var (
		body  []byte
		found bool
		err   error
	)
	if slices.Contains(names, epochsCheckpointFile) {
		body, found, err = engine.ReadChecked(p.fs, p.fs.PathJoin(p.dir, epochsCheckpointFile), epochsMagic)
	}
	if err == nil && found {
		if p.epochs, err = replication.UnmarshalEpochCache(body); err == nil {
			p.epochs.TruncateFromEnd(p.log.EndOffset())
			p.epochs.TruncateFromStart(p.log.StartOffset())
			p.epochsOnDisk = true
			return nil
		}
	}
	if err != nil && !errors.Is(err, engine.ErrCorrupt) && !errors.Is(err, errBadCheckpoint) && !errors.Is(err, replication.ErrBadEpochs) {
		return err
	}
	if found {
		p.logger.Warn("leader epoch checkpoint damaged; rebuilding it from the log", "err", err)
	}
	var scanErr error
	p.epochs = replication.RebuildEpochCache(p.batchInfos(&scanErr))
	return scanErr
}

// batchInfos iterates the headers of the log's batches; a read error ends
// the iteration and lands in *errp.
func (p *Partition) batchInfos(errp *error) iter.Seq[replication.BatchInfo] {
	return func(yield func(replication.BatchInfo) bool) {
		for off, end := p.log.StartOffset(), p.log.EndOffset(); off < end; {
			bs, err := p.log.Read(off, scanChunkBytes)
			if err != nil {
				*errp = fmt.Errorf("rebuild the leader epoch cache at %d: %w", off, err)
				return
			}
			if len(bs) == 0 {
				return
			}
			for _, b := range bs {
				h, err := batch.ParseHeader(b.Data)
				if err != nil {
					*errp = fmt.Errorf("rebuild the leader epoch cache: batch at %d: %w", b.BaseOffset, err)
					return
				}
				if !yield(replication.BatchInfo{BaseOffset: b.BaseOffset, LastOffset: b.LastOffset(), Epoch: h.PartitionLeaderEpoch}) {
					return
				}
			}
			off = bs[len(bs)-1].NextOffset()
		}
	}
}
