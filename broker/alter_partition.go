package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// proposeISR is the partitions' ProposeISR hook: a leader's ISR change goes
// to the controller as an AlterPartition (v3: each member with the broker
// epoch its fetch carried, KIP-903), and its answer back to the Leader that
// made it. It runs under the partition's replication lock, so the request
// goes on a goroutine of its own.
func (s *Server) proposeISR(p *partition.Partition, prop replication.ProposeISR) {
	gen := p.ProposalGen()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(req.MaxVersion())
		req.BrokerID, req.BrokerEpoch = s.cfg.NodeID, s.life.epoch.Load()
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.Topic, rt.TopicID = p.Topic(), p.Key().TopicID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.Index(), prop.LeaderEpoch, prop.PartitionEpoch
		for _, m := range prop.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = m.ID, m.BrokerEpoch
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := withTimeout(context.Background(), s.cfg.Clock, 5*time.Second)
		defer cancel()
		res := replication.AlterPartitionResult{Seq: prop.Seq}
		r, err := s.ctlClient.request(ctx, req)
		switch {
		case err != nil:
			res.Err = err
		case r.(*kmsg.AlterPartitionResponse).ErrorCode != 0:
			res.Err = kerr.ErrorForCode(r.(*kmsg.AlterPartitionResponse).ErrorCode)
		default:
			resp := r.(*kmsg.AlterPartitionResponse)
			res.Err = kerr.UnknownServerError
			for _, t := range resp.Topics {
				for _, sp := range t.Partitions {
					if sp.Partition == p.Index() {
						res.Err = kerr.ErrorForCode(sp.ErrorCode)
						res.LeaderEpoch, res.PartitionEpoch, res.ISR = sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR
					}
				}
			}
		}
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
