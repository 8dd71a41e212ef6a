package cluster

import (
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterPartition serves a leader's ISR changes, one partition at a time
// (each decided on the image the previous one left).
func (c *ControllerCore) alterPartition(o *Op, q Quorum, req *kmsg.AlterPartitionRequest) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	c.ready(o, q, func(err error) {
		if err != nil {
			resp.ErrorCode = code(err)
			o.finish(resp, nil)
			return
		}
		if b, ok := o.img.Broker(req.BrokerID); !ok || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			o.finish(resp, nil)
			return
		}
		var todo []alterItem
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionResponseTopic()
			st.Topic, st.TopidID = rt.Topic, rt.TopicID
			resp.Topics = append(resp.Topics, st)
			for _, rp := range rt.Partitions {
				todo = append(todo, alterItem{topic: len(resp.Topics) - 1, rt: rt, rp: rp})
			}
		}
		c.alterEach(o, req, resp, todo)
	})
}

type alterItem struct {
	topic int // index in the response
	rt    kmsg.AlterPartitionRequestTopic
	rp    kmsg.AlterPartitionRequestTopicPartition
}

func (c *ControllerCore) alterEach(o *Op, req *kmsg.AlterPartitionRequest, resp *kmsg.AlterPartitionResponse, todo []alterItem) {
	if len(todo) == 0 {
		o.finish(resp, nil)
		return
	}
	it := todo[0]
	id := uuid.UUID(it.rt.TopicID)
	if req.Version < 2 {
		if t, ok := o.img.Topic(it.rt.Topic); ok {
			id = t.ID
		}
	}
	a := AlterISR{
		Broker: req.BrokerID, BrokerEpoch: req.BrokerEpoch, TopicID: id, Partition: it.rp.Partition,
		LeaderEpoch: it.rp.LeaderEpoch, PartitionEpoch: it.rp.PartitionEpoch,
	}
	for _, m := range it.rp.NewEpochISR {
		a.NewISR = append(a.NewISR, ISRMember{ID: m.BrokerID, Epoch: m.BrokerEpoch})
	}
	for _, r := range it.rp.NewISR { // v0-2: no broker epochs
		a.NewISR = append(a.NewISR, ISRMember{ID: r, Epoch: -1})
	}
	answer := func(state Partition, err error) {
		sp := kmsg.NewAlterPartitionResponseTopicPartition()
		sp.Partition = it.rp.Partition
		sp.ErrorCode = code(err)
		if err == nil || sp.ErrorCode != kerr.UnknownTopicID.Code && sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = state.Leader, state.LeaderEpoch, state.ISR, state.PartitionEpoch
		}
		if err != nil {
			c.log.Info("AlterPartition refused", "broker", req.BrokerID, "partition", it.rp.Partition, "err", err)
		}
		st := &resp.Topics[it.topic]
		st.Partitions = append(st.Partitions, sp)
		c.alterEach(o, req, resp, todo[1:])
	}
	rec, state, err := c.cfg.Settings.AlterPartition(o.img, a)
	if err != nil || rec == nil {
		answer(state, err)
		return
	}
	o.commit([]Record{*rec}, func(_ uint64, err error) { answer(state, err) })
}

func (c *ControllerCore) allocateProducerIDs(o *Op, q Quorum, req *kmsg.AllocateProducerIDsRequest) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	fail := func(err error) { resp.ErrorCode = code(err); o.finish(resp, nil) }
	c.ready(o, q, func(err error) {
		if err != nil {
			fail(err)
			return
		}
		rec, err := c.cfg.Settings.AllocateProducerIDs(o.img, req.BrokerID, req.BrokerEpoch)
		if err != nil {
			fail(err)
			return
		}
		o.commit([]Record{rec}, func(_ uint64, err error) {
			if err != nil {
				fail(err)
				return
			}
			resp.ProducerIDStart, resp.ProducerIDLen = rec.ProducerIDs.First, int32(rec.ProducerIDs.Count)
			o.finish(resp, nil)
		})
	})
}
