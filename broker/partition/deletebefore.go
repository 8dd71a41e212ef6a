package partition

import (
	"fmt"

	"github.com/minikafka/minikafka/replication"
	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteBefore moves the log start to offset, as Kafka's DeleteRecords does,
// or, when offset falls inside a batch, to that batch's first offset: a
// batch is what replicas store and ship whole, and a follower that starts
// over at its leader's log start must be able to append the batch it
// fetches there. It returns the start it moved to. Reads below it fail
// with kerr.OffsetOutOfRange from then on, and the new start is durable
// when it returns. An offset at or below the log start does nothing; one
// above the high watermark is refused with kerr.OffsetOutOfRange
// (uncommitted records are never deleted).
//
// It works on every topic, internal ones included: retention never trims
// __consumer_offsets, and this is how its owner (the group coordinator,
// which compacts it by rewriting the live records at the log end) drops the
// prefix it no longer needs.
func (p *Partition) DeleteBefore(offset int64) (int64, error) {
	if p.gone.Load() {
		return 0, p.closedErr()
	}
	if offset > p.log.StartOffset() && offset <= p.wm.get() {
		if err := p.snapshotCovering(offset); err != nil {
			return p.log.StartOffset(), err
		}
	}
	start, moved, err := p.deleteBefore(offset)
	if moved {
		p.logStartMoved(start)
	}
	return start, err
}

// deleteBefore is DeleteBefore's move of the log itself, to start; moved
// reports that the start moved.
func (p *Partition) deleteBefore(offset int64) (start int64, moved bool, _ error) {
	// Under the time index's lock: retention and ListOffsets never see the
	// start move in the middle of a scan.
	ti := &p.ti
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if offset <= p.log.StartOffset() {
		return p.log.StartOffset(), false, nil
	}
	if hw := p.wm.get(); offset > hw {
		return p.log.StartOffset(), false, p.wrap(fmt.Errorf("delete before %d: above the high watermark %d: %w", offset, hw, kerr.OffsetOutOfRange))
	}
	if offset < p.log.EndOffset() {
		bs, err := p.log.Read(offset, 1)
		if err != nil {
			return p.log.StartOffset(), false, p.storageErr("delete before", err)
		}
		if len(bs) > 0 {
			offset = bs[0].BaseOffset // the batch holding offset stays whole
		}
		if offset <= p.log.StartOffset() {
			return p.log.StartOffset(), false, nil
		}
	}
	if err := p.log.DeleteBefore(offset); err != nil {
		return p.log.StartOffset(), false, p.writeFailed("delete before", err)
	}
	p.startPassedDurable()
	ti.reset() // rebuilt from the new start on its next use
	p.logger.Info("log start moved", "start", offset)
	return offset, true, nil
}

// logStartMoved tells the role's state machine that the log start moved
// to start under it (DeleteRecords, retention): a leader answers followers
// from the log it has (OFFSET_OUT_OF_RANGE below its start, which resets
// a follower left behind), and either role's epoch cache drops what lies
// before it.
//
// The producers' state outlives the batches it was read from: whoever
// moves the start writes a snapshot at or past it first
// (snapshotCoveringLocked).
func (p *Partition) logStartMoved(start int64) {
	p.mu.Lock()
	p.producers.PruneAborted(start)
	p.mu.Unlock()
	p.repMu.Lock()
	defer p.repMu.Unlock()
	ev := replication.LogStartMoved{Start: start}
	switch {
	case p.role.leader != nil:
		p.applyLocked(p.role.leader.Step(ev))
		p.fetchable.poke() // parked followers' fetches answer with the new start
	case p.role.follower != nil:
		p.applyLocked(p.role.follower.Step(ev))
	}
}

// startPassedDurable raises the durable end to a log start that moved past
// it: the engine's new start is durable when DeleteBefore returns, and no
// record below it is left to sync. A follower that learns its leader's log
// start from a fetch moves its own past batches it appended and has not
// synced yet; left below the start, its durable end broke the order every
// role is built on (log start <= durable end <= log end) at its next role
// change, and the partition could take none.
func (p *Partition) startPassedDurable() {
	p.durable.advance(p.log.StartOffset())
}
