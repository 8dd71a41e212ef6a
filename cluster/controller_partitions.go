package cluster

import (
	"context"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterPartition serves a leader's ISR changes, one partition at a time
// (each decided on the image the previous one left).
func (c *Controller) alterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	if b, ok := c.cfg.Store.Image().Broker(req.BrokerID); !ok || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		id := uuid.UUID(rt.TopicID)
		if req.Version < 2 {
			if t, ok := c.cfg.Store.Image().Topic(rt.Topic); ok {
				id = t.ID
			}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			a := AlterISR{
				Broker: req.BrokerID, BrokerEpoch: req.BrokerEpoch, TopicID: id, Partition: rp.Partition,
				LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch,
			}
			for _, m := range rp.NewEpochISR {
				a.NewISR = append(a.NewISR, ISRMember{ID: m.BrokerID, Epoch: m.BrokerEpoch})
			}
			for _, r := range rp.NewISR { // v0-2: no broker epochs
				a.NewISR = append(a.NewISR, ISRMember{ID: r, Epoch: -1})
			}
			rec, state, err := c.cfg.Settings.AlterPartition(c.cfg.Store.Image(), a)
			if err == nil && rec != nil {
				_, err = c.commit(ctx, []Record{*rec})
			}
			sp.ErrorCode = code(err)
			if err == nil || sp.ErrorCode != kerr.UnknownTopicID.Code && sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = state.Leader, state.LeaderEpoch, state.ISR, state.PartitionEpoch
			}
			if err != nil {
				c.log.Info("AlterPartition refused", "broker", req.BrokerID, "partition", rp.Partition, "err", err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (c *Controller) allocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(ctx); err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	rec, err := c.cfg.Settings.AllocateProducerIDs(c.cfg.Store.Image(), req.BrokerID, req.BrokerEpoch)
	if err == nil {
		_, err = c.commit(ctx, []Record{rec})
	}
	if err != nil {
		resp.ErrorCode = code(err)
		return resp
	}
	resp.ProducerIDStart, resp.ProducerIDLen = rec.ProducerIDs.First, int32(rec.ProducerIDs.Count)
	return resp
}
