package partition

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteRecords is Kafka's DeleteRecords (KIP-107) at the partition's
// leader: it moves the log start to offset as DeleteBefore does (-1 means
// the high watermark; inside a batch, to that batch's first offset), then
// waits until every replica of the ISR has its log start there too, and
// returns the low watermark then: the lowest log start over the ISR, at
// or past what was asked, or past the new start when the batch holding
// offset was kept (see Leader.LowWatermark).
//
// Errors wrap kerr values: NOT_LEADER_OR_FOLLOWER when this broker does
// not lead the partition, or stops leading it while it waits;
// OFFSET_OUT_OF_RANGE for an offset above the high watermark or below -1.
// When ctx ends first it returns ctx.Err() with the low watermark as it
// was: the log start moved here all the same, and the followers still
// follow it.
func (p *Partition) DeleteRecords(ctx context.Context, offset int64) (int64, error) {
	gen, err := p.leaderGen()
	if err != nil {
		return -1, err
	}
	switch {
	case offset == -1:
		offset = p.wm.get()
	case offset < -1:
		return -1, p.wrap(fmt.Errorf("delete records before %d: %w", offset, kerr.OffsetOutOfRange))
	}
	start, err := p.DeleteBefore(offset)
	if err != nil {
		return -1, err
	}
	// The followers' log starts are batch boundaries of the same log: they
	// reach the leader's new start, not a requested offset inside its batch.
	return p.waitLowWatermark(ctx, gen, min(offset, start))
}

// leaderGen is the generation of the current role when this broker leads
// the partition, NOT_LEADER_OR_FOLLOWER otherwise.
func (p *Partition) leaderGen() (uint64, error) {
	if p.gone.Load() {
		return 0, p.closedErr()
	}
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.role.leader == nil {
		return 0, p.wrap(fmt.Errorf("not the leader: %w", kerr.NotLeaderForPartition))
	}
	return p.role.gen, nil
}

// waitLowWatermark waits, within the leadership of role generation gen,
// for the leader's low watermark to reach target.
func (p *Partition) waitLowWatermark(ctx context.Context, gen uint64, target int64) (int64, error) {
	for {
		changed := p.starts.changed()
		low, ok := p.lowWatermark(gen)
		switch {
		case !ok:
			return low, p.wrap(fmt.Errorf("leadership lost while waiting for the replicas' log start: %w", kerr.NotLeaderForPartition))
		case low >= target:
			return low, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return low, ctx.Err()
		}
	}
}

// lowWatermark is the leader's low watermark, and false once the role of
// generation gen has ended.
func (p *Partition) lowWatermark(gen uint64) (int64, bool) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.role.leader == nil || p.role.gen != gen || p.gone.Load() {
		return p.starts.get(), false
	}
	return p.role.leader.LowWatermark(), true
}

// noteLowLocked wakes DeleteRecords waiters when the leader's low
// watermark moved, after a step of the leader; the caller holds repMu.
func (p *Partition) noteLowLocked() {
	if l := p.role.leader; l != nil {
		p.starts.set(l.LowWatermark())
		p.leaderStart.Store(l.LogStart())
	}
}
