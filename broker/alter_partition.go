package broker

import (
	"context"

	"github.com/minikafka/minikafka/broker/node"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// proposeISR is the partitions' ProposeISR hook: a leader's ISR change goes
// to the controller as an AlterPartition (node.AlterPartitionRequest), and
// its answer back to the Leader that made it. It runs under the
// partition's replication lock, so the request goes on a goroutine of its
// own.
func (s *Server) proposeISR(p *partition.Partition, prop replication.ProposeISR) {
	gen := p.ProposalGen()
	req := node.AlterPartitionRequest(s.cfg.NodeID, s.life.epoch.Load(), p, prop)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := withTimeout(context.Background(), s.cfg.Clock, node.AlterPartitionTimeout)
		defer cancel()
		resp, err := s.ctlClient.request(ctx, req)
		res := node.AlterPartitionResult(p.Index(), prop, resp, err)
		if res.Err != nil {
			s.log.Info("ISR change refused", "topic", p.Topic(), "partition", p.Index(), "isr", prop.NewISR, "err", res.Err)
		} else {
			s.log.Info("ISR changed", "topic", p.Topic(), "partition", p.Index(), "isr", res.ISR, "partition-epoch", res.PartitionEpoch)
			if st, ok := p.LeaderStatus(s.cfg.Clock.Now()); ok {
				s.metrics.replication.isrChanged(len(st.ISR), len(res.ISR))
			}
		}
		res.Now = s.cfg.Clock.Now()
		p.AlterPartitionResult(gen, res)
	}()
}
