package node

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProducerIDs hands out producer ids from blocks the controller allocates
// to this broker (AllocateProducerIDs), so that ids are unique in the whole
// cluster and never repeat across restarts: a block is committed in the
// metadata log before any id of it is used. A block is asked for when one
// is needed (Take found none left); one request is in flight at a time.
// One driver goroutine at a time.
type ProducerIDs struct {
	self        int32
	first, last int64 // [first, last) is left of the current block
	wanted      bool
	busy        bool
}

// allocateTimeout bounds the wait for a block.
const allocateTimeout = 5 * time.Second

// NewProducerIDs is the producer id source of broker self.
func NewProducerIDs(self int32) *ProducerIDs { return &ProducerIDs{self: self} }

// Take returns a producer id never handed out before, or false when the
// block is used up: Next then has the request for a new one.
func (p *ProducerIDs) Take() (int64, bool) {
	if p.first < p.last {
		id := p.first
		p.first++
		return id, true
	}
	p.wanted = true
	return 0, false
}

// Next is the request for a new block, when one is wanted and this broker
// is registered at brokerEpoch (0: not yet).
func (p *ProducerIDs) Next(brokerEpoch int64) (Call, bool) {
	if !p.wanted || p.busy || brokerEpoch == 0 {
		return Call{}, false
	}
	p.busy = true
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = p.self, brokerEpoch
	return Call{Req: req, To: ToController, Timeout: allocateTimeout}, true
}

// Answer takes the block the controller answered with; the error says why
// there is none (the next Take asks again).
func (p *ProducerIDs) Answer(resp kmsg.Response, err error) (first, n int64, _ error) {
	p.busy = false
	r, ok := resp.(*kmsg.AllocateProducerIDsResponse)
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("allocate producer ids: %w: %w", err, kerr.CoordinatorNotAvailable)
	case !ok:
		return 0, 0, fmt.Errorf("allocate producer ids: answered with %T: %w", resp, kerr.CoordinatorNotAvailable)
	case r.ErrorCode != 0:
		return 0, 0, fmt.Errorf("allocate producer ids: %w", kerr.ErrorForCode(r.ErrorCode))
	}
	p.wanted = false
	p.first, p.last = r.ProducerIDStart, r.ProducerIDStart+int64(r.ProducerIDLen)
	return r.ProducerIDStart, int64(r.ProducerIDLen), nil
}
