package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDs hands out producer ids from blocks the controller allocates
// to this broker (AllocateProducerIDs), so ids are unique in the whole
// cluster and never repeat across restarts: a block is committed in the
// metadata log before any id of it is used.
type producerIDs struct {
	s *Server

	mu          sync.Mutex
	first, last int64 // [first, last) is left of the current block
}

// next returns a producer id never handed out before.
func (p *producerIDs) next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first < p.last {
		id := p.first
		p.first++
		return id, nil
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = p.s.cfg.NodeID, p.s.life.epoch.Load()
	if req.BrokerEpoch == 0 {
		return 0, fmt.Errorf("allocate producer ids: this broker is not registered yet: %w", kerr.CoordinatorNotAvailable)
	}
	r, err := p.s.ctlClient.request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("allocate producer ids: %w: %w", err, kerr.CoordinatorNotAvailable)
	}
	resp := r.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, fmt.Errorf("allocate producer ids: %w", err)
	}
	p.first, p.last = resp.ProducerIDStart+1, resp.ProducerIDStart+int64(resp.ProducerIDLen)
	return resp.ProducerIDStart, nil
}
