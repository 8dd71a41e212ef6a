package partition

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteBefore moves the log start to offset, as Kafka's DeleteRecords does:
// reads below it fail with kerr.OffsetOutOfRange from then on, and the new
// start is durable when it returns. An offset at or below the log start
// does nothing; one above the high watermark is refused with
// kerr.OffsetOutOfRange (uncommitted records are never deleted).
//
// It works on every topic, internal ones included: retention never trims
// __consumer_offsets, and this is how its owner (the group coordinator,
// which compacts it by rewriting the live records at the log end) drops the
// prefix it no longer needs.
func (p *Partition) DeleteBefore(offset int64) error {
	if p.gone.Load() {
		return p.closedErr()
	}
	// Under the time index's lock: retention and ListOffsets never see the
	// start move in the middle of a scan.
	ti := &p.ti
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if offset <= p.log.StartOffset() {
		return nil
	}
	if hw := p.wm.get(); offset > hw {
		return p.wrap(fmt.Errorf("delete before %d: above the high watermark %d: %w", offset, hw, kerr.OffsetOutOfRange))
	}
	if err := p.log.DeleteBefore(offset); err != nil {
		return p.storageErr("delete before", err)
	}
	ti.reset() // rebuilt from the new start on its next use
	p.logger.Info("log start moved", "start", offset)
	return nil
}
