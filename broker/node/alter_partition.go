package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/replication"
)

// A leader's ISR change goes to the controller as an AlterPartition, at the
// newest version (v3: each member with the broker epoch its fetch carried,
// KIP-903), and the controller's answer goes back to the Leader that made
// the proposal (Partition.AlterPartitionResult, with the proposal
// generation taken when it was made: an answer to an earlier leadership is
// dropped there). The partitions' ProposeISR hook runs under the
// partition's lock, so a driver only builds the request there and sends it
// from elsewhere.

// AlterPartitionTimeout bounds an ISR change's trip to the controller.
const AlterPartitionTimeout = 5 * time.Second

// AlterPartitionRequest is the request for prop, made by broker self at
// brokerEpoch for partition p.
func AlterPartitionRequest(self int32, brokerEpoch int64, p *partition.Partition, prop replication.ProposeISR) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = self, brokerEpoch
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
	return req
}

// AlterPartitionResult is what the controller's answer (or the failure to
// get one, err) says of prop, for partition index.
func AlterPartitionResult(index int32, prop replication.ProposeISR, resp kmsg.Response, err error) replication.AlterPartitionResult {
	res := replication.AlterPartitionResult{Seq: prop.Seq}
	r, ok := resp.(*kmsg.AlterPartitionResponse)
	switch {
	case err != nil:
		res.Err = err
	case !ok:
		res.Err = kerr.UnknownServerError
	case r.ErrorCode != 0:
		res.Err = kerr.ErrorForCode(r.ErrorCode)
	default:
		res.Err = kerr.UnknownServerError // unless the answer names the partition
		for _, t := range r.Topics {
			for _, sp := range t.Partitions {
				if sp.Partition == index {
					res.Err = kerr.ErrorForCode(sp.ErrorCode)
					res.LeaderEpoch, res.PartitionEpoch, res.ISR = sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR
				}
			}
		}
	}
	return res
}
