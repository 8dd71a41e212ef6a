package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/node"
)

// A broker that is not a voter follows the voters' metadata log with the
// product's node.MetadataFollower; a voter answers its fetches with
// node.ServeMetadata (parked until its image moves, up to the fetch's long
// poll) and node.Snapshot, and its DescribeQuorum with the voters, as the
// broker's controller listener does.

// followMetadata sends the metadata follower's next fetch, if one is due.
func (b *broker) followMetadata() {
	if b.meta == nil {
		return
	}
	voter, ok := b.router.Target(-1)
	if !ok {
		return
	}
	c, ok := b.meta.Next(b.s.time(), voter)
	if !ok {
		return
	}
	b.call(c, func(resp kmsg.Response, err error) {
		_ = b.meta.Answer(b.s.time(), c, resp, err)
		b.process()
		b.followMetadata()
	})
}

// parkedMeta is a follower's metadata fetch waiting at a voter.
type parkedMeta struct {
	req      *kmsg.FetchRequest
	deadline int64
	reply    func(kmsg.Response)
}

// serveController is the controller listener of broker b: what a
// controller request, sent to this broker, gets.
func (b *broker) serveController(req kmsg.Request, reply func(kmsg.Response)) {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		p := &parkedMeta{req: r, deadline: b.s.now + int64(r.MaxWaitMillis), reply: reply}
		if !b.answerMetadata(p, false) {
			b.metaParked = append(b.metaParked, p)
			b.later(int64(r.MaxWaitMillis), "metadata-fetch-wait", b.wakeMetadataFetches)
		}
	case *kmsg.FetchSnapshotRequest:
		reply(node.Snapshot(b.store, r))
	case *kmsg.DescribeQuorumRequest:
		// As a voter that does not lead the quorum answers, whichever
		// this is: the voters are what the asking broker reads.
		reply(node.DescribeQuorum(r, func(p *kmsg.DescribeQuorumResponseTopicPartition) {
			node.DescribeAsFollower(p, b.leader(), b.term, b.s.voters())
		}))
	default:
		b.ops.Submit(b.ops.HandleJob(req, func(resp kmsg.Response, err error) {
			if err == nil {
				reply(resp)
			}
		}))
		b.process()
	}
}

// answerMetadata answers p unless there is nothing new and it may wait.
func (b *broker) answerMetadata(p *parkedMeta, last bool) bool {
	resp, ready := node.ServeMetadata(b.store, p.req, b.s.time())
	if !ready && !last {
		return false
	}
	p.reply(resp)
	return true
}

// wakeMetadataFetches answers the parked metadata fetches that have
// something new or waited enough.
func (b *broker) wakeMetadataFetches() {
	parked := b.metaParked
	b.metaParked = nil
	for _, p := range parked {
		if !b.answerMetadata(p, b.s.now >= p.deadline) {
			b.metaParked = append(b.metaParked, p)
		}
	}
}
