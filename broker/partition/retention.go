package partition

import (
	"time"

	"github.com/minikafka/minikafka/broker/batch"
)

// DefaultRetentionCheckInterval is how often retention runs by default:
// Kafka's log.retention.check.interval.ms.
const DefaultRetentionCheckInterval = 5 * time.Minute

// enforceRetention moves the log start past the committed batches that
// retention.ms or retention.bytes no longer keeps, and returns how many
// offsets it removed. It works at batch granularity (Kafka works at segment
// granularity; the engine reclaims space at its own): a batch goes when its
// max timestamp is older than now - retention.ms and so is every batch
// before it, or while the committed log without it is still larger than
// retention.bytes. Batches at or above the high watermark always stay.
//
// Internal topics are never trimmed: Kafka compacts them, this broker does
// not, and deleting old records of __consumer_offsets would lose offsets of
// groups that did not commit for a while.
func (p *Partition) enforceRetention(now time.Time) (int64, error) {
	for range 2 { // a second try when the log grew past the snapshot meanwhile
		removed, start, snapTo, err := p.retain(now)
		if snapTo > 0 {
			// Outside the time index's lock: the snapshot takes the append
			// lock, which a follower's fetch holds while it takes this one.
			if err := p.snapshotCovering(snapTo); err != nil {
				return 0, err
			}
			continue
		}
		if removed > 0 {
			p.logStartMoved(start) // after the time index's lock is released
		}
		return removed, err
	}
	return 0, nil
}

// retain moves the log start as the topic's retention says; it returns the
// offsets removed and the new start, or, moving nothing, the start that
// needs a producer snapshot first (snapTo).
func (p *Partition) retain(now time.Time) (removed, start, snapTo int64, _ error) {
	cfg := p.cfg.Load()
	if p.internal || (cfg.retentionMs < 0 && cfg.retentionBytes < 0) || p.gone.Load() {
		return 0, 0, 0, nil
	}
	ti := &p.ti
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if err := ti.catchUp(p); err != nil {
		return 0, 0, 0, err
	}
	target, cum := ti.start, ti.cumStart
	if cfg.retentionMs >= 0 {
		cutoff := now.UnixMilli() - cfg.retentionMs
		off, c, err := ti.scan(p, ti.entryBefore(cutoff), func(_ []byte, h batch.Header, _ int64) bool {
			return h.MaxTimestamp >= cutoff
		})
		if err != nil {
			return 0, 0, 0, err
		}
		if off > target {
			target, cum = off, c
		}
	}
	if limit := cfg.retentionBytes; limit >= 0 && ti.cumCovered-cum > limit {
		need := ti.cumCovered - limit // bytes that must lie before the new start
		off, c, err := ti.scan(p, ti.entryAtBytes(need), func(_ []byte, _ batch.Header, c int64) bool {
			return c >= need
		})
		if err != nil {
			return 0, 0, 0, err
		}
		if off > target {
			target, cum = off, c
		}
	}
	if target <= ti.start {
		return 0, 0, 0, nil
	}
	if p.snapSaved.Load() < target {
		return 0, 0, target, nil
	}

	if err := p.log.DeleteBefore(target); err != nil {
		return 0, 0, 0, p.writeFailed("retention", err)
	}
	p.startPassedDurable()
	removed = target - ti.start
	ti.moveStart(target, cum)
	p.logger.Info("retention moved the log start", "start", target, "removed_offsets", removed)
	return removed, target, 0, nil
}
