package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch/batchcodec"
	"github.com/minikafka/minikafka/cluster"
)

// Clients: idempotent producers (acks=all or acks=1, one batch in flight,
// retried with the same sequence until answered), consumers reading each
// partition to the high watermark, and an admin that creates the topics
// and churns extra ones. A client learns leaders from the image of a
// broker it can reach, as a Metadata request would.

type client interface {
	done() bool
	describe() string
}

// metadata is the view of a reachable broker, or nil.
func (s *Sim) metadata(from int32) *cluster.Metadata {
	ids := s.net.brokerIDs()
	start := s.work.IntN(len(ids))
	for i := range ids {
		b := s.brokers[ids[(start+i)%len(ids)]-1]
		if b.up && !s.net.clogged(from, b.id) && !s.net.clogged(b.id, from) {
			return b.store.Image()
		}
	}
	return nil
}

// leaderIn is the leader of topic's partition part in img, and the
// partition's key; false when img is nil (the client reached no broker)
// or names no such partition, or it has no leader.
func leaderIn(img *cluster.Metadata, topic string, part int32) (tp, int32, bool) {
	if img == nil {
		return tp{}, 0, false
	}
	t, ok := img.Topic(topic)
	if !ok || int(part) >= len(t.Partitions) || t.Partitions[part].Leader == cluster.NoLeader {
		return tp{}, 0, false
	}
	return tp{t.ID, part}, t.Partitions[part].Leader, true
}

type producerClient struct {
	s         *Sim
	id        int32
	topic     string
	part      int32
	acks      int16
	total     int
	sent      int // batches acknowledged
	pid       int64
	epoch     int16
	seq       int32
	values    [][]byte // the batch in flight
	data      []byte
	firstSent int64 // when the batch in flight was first sent
	finished  bool
	abandoned bool
	high      int64 // the offset past its last batch acknowledged
}

func (p *producerClient) done() bool { return p.finished || p.abandoned }
func (p *producerClient) describe() string {
	return fmt.Sprintf("producer %d (acks=%d) on %s-%d: %d of %d batches", p.id, p.acks, p.topic, p.part, p.sent, p.total)
}

func (p *producerClient) wake(delay int64) { p.s.at(delay, "producer", p.step) }

func (p *producerClient) step() {
	s := p.s
	if p.done() || s.stopped {
		return
	}
	img := s.metadata(p.id)
	if img == nil {
		p.wake(50)
		return
	}
	if p.pid < 0 {
		p.initPID()
		return
	}
	t, ok := img.Topic(p.topic)
	if !ok || int(p.part) >= len(t.Partitions) {
		p.wake(50)
		return
	}
	if p.data == nil {
		n := 1 + s.work.IntN(3)
		p.values = nil
		for i := range n {
			p.values = append(p.values, []byte(fmt.Sprintf("p%d-e%d-b%d-r%d", p.id, p.epoch, p.sent, i)))
		}
		p.build()
		p.firstSent = s.now
	}
	leader := t.Partitions[p.part].Leader
	if leader == cluster.NoLeader {
		p.wake(50)
		return
	}
	k := tp{t.ID, p.part}
	data := p.data
	s.rpc(p.id, leader, "produce", 800, func(reply func(any)) {
		s.brokers[leader-1].serveProduce(produceReq{tp: k, acks: p.acks, data: data}, func(r produceResp) { reply(r) })
	}, func(resp any) {
		if p.done() || string(p.data) != string(data) {
			return
		}
		r, ok := resp.(produceResp)
		switch {
		case !ok:
			p.wake(20)
		case r.err == nil:
			s.checks.acked(p, k, r.base, r.last, r.epoch, p.values, r.holders)
			p.high = max(p.high, r.last+1)
			p.sent++
			p.seq += int32(len(p.values))
			p.data = nil
			if p.sent >= p.total {
				p.finished = true
				return
			}
			p.wake(int64(1 + s.work.IntN(20)))
		case errors.Is(r.err, kerr.OutOfOrderSequenceNumber), errors.Is(r.err, kerr.InvalidProducerEpoch):
			// The leader lacks what came before (an acks=1 batch lost):
			// start a new epoch, as the Java producer resets its sequence
			// (KIP-360). The batch in flight failed as far as the
			// application knows; it sends its records again as new ones, so
			// an earlier copy that was stored is an unacknowledged write,
			// not a duplicate of the producer's.
			p.epoch++
			p.seq = 0
			p.data = nil
			p.wake(20)
		default:
			p.wake(50)
		}
	})
}

func (p *producerClient) build() {
	data, err := batchcodec.Build(batchcodec.Spec{
		Values: p.values, Timestamp: p.s.now, Idempotent: true,
		ProducerID: p.pid, ProducerEpoch: p.epoch, BaseSequence: p.seq,
	})
	if err != nil {
		panic(err) // batchcodec builds any batch of values
	}
	p.data = data
}

// initPID asks a broker for a producer id from its block (InitProducerId).
func (p *producerClient) initPID() {
	s := p.s
	to := 1 + int32(s.work.IntN(s.opts.Brokers))
	s.rpc(p.id, to, "init-pid", 300, func(reply func(any)) {
		reply(s.brokers[to-1].nextPID())
	}, func(resp any) {
		if id, ok := resp.(int64); ok && id >= 0 {
			p.pid = id
			p.step()
			return
		}
		p.wake(50)
	})
}

type consumerClient struct {
	s     *Sim
	id    int32
	topic string
	part  int32
	pos   int64
	hw    int64
}

func (c *consumerClient) done() bool { return true }
func (c *consumerClient) describe() string {
	return fmt.Sprintf("consumer %d on %s-%d at %d", c.id, c.topic, c.part, c.pos)
}

func (c *consumerClient) step() {
	s := c.s
	if s.stopped {
		return
	}
	again := func(d int64) { s.at(d, "consumer", c.step) }
	k, leader, ok := leaderIn(s.metadata(c.id), c.topic, c.part)
	if !ok {
		again(50)
		return
	}
	pos := c.pos
	s.rpc(c.id, leader, "consume", 300, func(reply func(any)) {
		reply(s.brokers[leader-1].serveConsume(k, pos))
	}, func(resp any) {
		r, ok := resp.(consumeResp)
		if ok && errors.Is(r.err, kerr.OffsetOutOfRange) && pos == c.pos {
			// auto.offset.reset=earliest: the log start moved past the
			// position (retention, DeleteRecords), or the log lost what it
			// had (sync=never): start over from the log's start.
			s.tracef("consumer %d resets %s from %d to %d", c.id, k, pos, r.logStart)
			s.stats.Faults["consumer-reset"]++
			c.pos = r.logStart
			s.checks.polls.seek(c.id, k, c.pos)
			again(10)
			return
		}
		if !ok || r.err != nil || pos != c.pos {
			again(30)
			return
		}
		c.hw = max(c.hw, r.hw)
		s.checks.polled(c, k, pos, r.batches)
		again(int64(10 + s.work.IntN(40)))
	})
}

// admin creates the workload's topics and churns extra ones.
type admin struct {
	s       *Sim
	id      int32
	pending []string // topics to create
	churn   []string // churn topics created
	n       int
}

func (a *admin) step() {
	s := a.s
	if s.stopped {
		return
	}
	again := func(d int64) { s.at(d, "admin", a.step) }
	to := 1 + int32(s.work.IntN(s.opts.Brokers))
	if len(a.pending) > 0 {
		name := a.pending[0]
		partitions, configs := int32(s.opts.Partitions), s.opts.topicConfigs()
		switch name {
		case txnTopic:
			partitions, configs = int32(s.opts.TxnPartitions), nil
		case txnStateTopic:
			partitions, configs = int32(s.opts.TxnStatePartitions), nil
		case copyInTopic:
			partitions, configs = int32(s.opts.copiers()), nil
		case offsetsTopic:
			partitions, configs = 1, nil
		}
		req := createTopics(name, partitions, int16(s.opts.ReplicationFactor), configs)
		s.callController(a.id, to, req, func(r kmsgResponse) {
			if created(r, name) {
				s.tracef("admin created %s", name)
				a.pending = a.pending[1:]
			}
			again(20)
		})
		return
	}
	if !s.opts.TopicChurn || s.phase != "safety" {
		return
	}
	if len(a.churn) > 0 && s.work.IntN(2) == 0 {
		name := a.churn[0]
		s.callController(a.id, to, deleteTopics(name), func(r kmsgResponse) {
			if deleted(r) {
				s.tracef("admin deleted %s", name)
				a.churn = a.churn[1:]
			}
			again(200 + int64(s.work.IntN(500)))
		})
		return
	}
	a.n++
	name := fmt.Sprintf("churn-%d", a.n)
	s.callController(a.id, to, createTopics(name, 1, int16(s.opts.ReplicationFactor), nil), func(r kmsgResponse) {
		if created(r, name) {
			a.churn = append(a.churn, name)
		}
		again(200 + int64(s.work.IntN(500)))
	})
}

// startWorkload creates the clients.
func (s *Sim) startWorkload() {
	o := s.opts
	id := int32(clientBase)
	s.admin = &admin{s: s, id: id}
	s.net.nodes = append(s.net.nodes, id)
	for i := range o.Topics {
		s.admin.pending = append(s.admin.pending, fmt.Sprintf("t%d", i))
	}
	s.at(50, "admin", s.admin.step)
	for i := range o.Producers {
		id++
		p := &producerClient{s: s, id: id, topic: fmt.Sprintf("t%d", i%o.Topics), part: int32(i % o.Partitions),
			acks: 1, total: o.BatchesEach, pid: -1}
		if s.work.IntN(100) < o.AcksAllPct {
			p.acks = -1
		}
		s.clients = append(s.clients, p)
		s.net.nodes = append(s.net.nodes, id)
		p.wake(100 + int64(s.work.IntN(200)))
	}
	s.startTxnWorkload(&id)
	for i := range o.Consumers {
		id++
		c := &consumerClient{s: s, id: id, topic: fmt.Sprintf("t%d", i%o.Topics), part: int32(i % o.Partitions)}
		s.clients = append(s.clients, c)
		s.net.nodes = append(s.net.nodes, id)
		s.at(200, "consumer", c.step)
	}
}

type kmsgResponse = kmsg.Response

func createTopics(name string, partitions int32, rf int16, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// created: the topic exists now (made by this request or an earlier try).
func created(r kmsg.Response, name string) bool {
	resp, ok := r.(*kmsg.CreateTopicsResponse)
	if !ok || len(resp.Topics) != 1 {
		return false
	}
	c := resp.Topics[0].ErrorCode
	return c == 0 || c == kerr.TopicAlreadyExists.Code
}

func deleteTopics(name string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: &name})
	return req
}

func deleted(r kmsg.Response) bool {
	resp, ok := r.(*kmsg.DeleteTopicsResponse)
	if !ok || len(resp.Topics) != 1 {
		return false
	}
	c := resp.Topics[0].ErrorCode
	return c == 0 || c == kerr.UnknownTopicOrPartition.Code
}
