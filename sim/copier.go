package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch/batchcodec"
	"github.com/minikafka/minikafka/broker/txn"
)

// Consume-transform-produce: an idempotent producer (acks=all) writes
// records to each partition of topic "cin", and a copier per partition of
// it, a transactional producer with its own transactional id (so that a
// copier started again fences its zombie), copies them into topic "tx"
// exactly once, as Kafka Streams does: each
// transaction starts from the group's committed offset of its input
// partition (OffsetFetch with RequireStable, retried while a transaction
// has one pending, UNSTABLE_OFFSET_COMMIT), reads a few records from
// there, writes each one's copy to a partition of "tx", commits the
// offset past them in the same transaction (AddOffsetsToTxn and
// TxnOffsetCommit on the first transaction version; TxnOffsetCommit v5,
// which adds the group's partition, on the second), and commits or aborts
// it. The offset's metadata names the transaction that committed it, so
// that the checkers know which commit the next one read. Now and then a
// copier crashes mid-transaction: it starts again with a new epoch
// (InitProducerId), which aborts what it left open, and its requests
// still in flight land as a zombie's. A copy's value names its
// transaction first ("x<n>-t<k>-c<part>.<offset>.<input>"), so the
// transaction checkers read the copies as any transactional record.

const (
	copyInTopic = "cin"
	copyGroup   = "copy"
	copyRPCMs   = 800
)

// copier is what a copier adds to a transactional producer.
type copier struct {
	part   int32           // its input partition
	feeder *producerClient // the producer of its input partition
	busy   bool            // a step of the next transaction's start is out
}

// copyRun is what a copier's transaction copies.
type copyRun struct {
	from, to     int64  // the input offsets copied: [from, to)
	readFrom     string // the transaction that committed from, per its metadata
	offsetsAdded bool   // v1: AddOffsetsToTxn answered
	offsetsBusy  bool
	offsetsDone  bool // TxnOffsetCommit answered
}

// groupCoordinator is the broker the client's metadata names as the
// group's coordinator (FindCoordinator), or -1.
func (p *txnProducer) groupCoordinator() int32 {
	img := p.s.metadata(p.id)
	if img == nil {
		return -1
	}
	t, ok := img.Topic(offsetsTopic)
	if !ok {
		return -1
	}
	return t.Partitions[groupPartitionOf(copyGroup)].Leader
}

// copyBegin starts the copier's next transaction: the group's committed
// offset, then the input records from there.
func (p *txnProducer) copyBegin() {
	s, cp := p.s, p.cp
	if cp.busy {
		return
	}
	to := p.groupCoordinator()
	if to < 0 {
		p.wake(50)
		return
	}
	cp.busy = true
	pid := p.pid
	s.rpc(p.id, to, "offset-fetch", copyRPCMs, func(reply func(any)) {
		s.brokers[to-1].serveOffsetFetch(copyGroup, copyInTopic, cp.part, func(off int64, md string, code int16) {
			reply(offsetFetched{off, md, code})
		})
	}, func(resp any) {
		cp.busy = false
		r, ok := resp.(offsetFetched)
		switch {
		case p.pid != pid || p.cur != nil:
			return
		case !ok || r.code != 0:
			if ok && r.code == kerr.UnstableOffsetCommit.Code {
				s.stats.Faults["copy-unstable-offset"]++
			}
			p.wake(20)
			return
		}
		from := max(r.offset, 0)
		if cp.feeder.done() && from >= cp.feeder.high {
			s.tracef("%s copied %s-%d to %d: done", p.txnID(), copyInTopic, cp.part, from)
			p.finished = true
			return
		}
		p.copyRead(from, r.metadata)
	})
}

type offsetFetched struct {
	offset   int64
	metadata string
	code     int16
}

// copyRead reads the input from offset from and begins the transaction
// that copies what it got.
func (p *txnProducer) copyRead(from int64, readFrom string) {
	s, cp := p.s, p.cp
	k, leader, ok := leaderIn(s.metadata(p.id), copyInTopic, cp.part)
	if !ok {
		p.wake(50)
		return
	}
	cp.busy = true
	pid := p.pid
	s.rpc(p.id, leader, "copy-read", copyRPCMs, func(reply func(any)) {
		reply(s.brokers[leader-1].serveConsume(k, from))
	}, func(resp any) {
		cp.busy = false
		if p.pid != pid || p.cur != nil {
			return
		}
		r, ok := resp.(consumeResp)
		if !ok || r.err != nil {
			p.wake(30)
			return
		}
		var recs []batchcodec.Record
		n := 1 + s.work.IntN(5)
		for _, rec := range decode(s, r.batches) {
			if rec.Offset >= from && len(recs) < n {
				recs = append(recs, rec)
			}
		}
		if len(recs) == 0 {
			p.wake(50)
			return
		}
		p.copyTxn(from, readFrom, recs)
		p.step()
	})
}

// copyTxn builds the transaction that copies recs, read from offset from.
func (p *txnProducer) copyTxn(from int64, readFrom string, recs []batchcodec.Record) {
	s := p.s
	p.started++
	run := &txnRun{name: fmt.Sprintf("x%d-t%d", p.n, p.started), start: s.now,
		copy: &copyRun{from: from, to: recs[len(recs)-1].Offset + 1, readFrom: readFrom}}
	byPart := map[int32][][]byte{}
	for _, rec := range recs {
		part := int32((rec.Offset + int64(p.cp.part)) % int64(s.opts.TxnPartitions))
		byPart[part] = append(byPart[part], []byte(fmt.Sprintf("%s-c%d.%d.%s", run.name, p.cp.part, rec.Offset, rec.Value)))
	}
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		run.writes = append(run.writes, p.txnWrite(part, byPart[part]))
	}
	s.checks.copies.began(s, run.name, p.cp.part, run.copy.from, run.copy.to, readFrom)
	s.tracef("%s %s copies %s-%d [%d, %d) read from %q", p.txnID(), run.name, copyInTopic, p.cp.part, run.copy.from, run.copy.to, readFrom)
	p.cur = run
}

// addOffsets is AddOffsetsToTxn (first transaction version): the group's
// partition of __consumer_offsets joins the transaction.
func (p *txnProducer) addOffsets() {
	run := p.cur
	tps := []txn.TopicPartition{{Topic: offsetsTopic, Partition: groupPartitionOf(copyGroup)}}
	p.add("txn-add-offsets", tps, func() { run.copy.offsetsAdded = true })
}

// commitOffsets is TxnOffsetCommit: the offset past the records copied,
// in the transaction, its metadata the transaction's name.
func (p *txnProducer) commitOffsets() {
	s, run := p.s, p.cur
	cr := run.copy
	if cr.offsetsBusy {
		return
	}
	to := p.groupCoordinator()
	if to < 0 {
		p.retry(run, 50)
		return
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	if !p.v1 {
		req.Version = 5
	}
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = p.txnID(), copyGroup, p.pid, p.epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = copyInTopic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.cp.part, cr.to, -1, kmsg.StringPtr(run.name)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cr.offsetsBusy = true
	s.rpc(p.id, to, "txn-offset-commit", copyRPCMs, func(reply func(any)) {
		s.brokers[to-1].serveTxnOffsetCommit(req, !p.v1, func(code int16) { reply(code) })
	}, func(resp any) {
		cr.offsetsBusy = false
		if p.cur != run || run.failed || run.ending {
			return
		}
		code, ok := resp.(int16)
		switch {
		case ok && code == 0:
			cr.offsetsDone = true
			p.wake(0)
		case !ok || retriableTxn(code) || code == kerr.NotEnoughReplicas.Code:
			p.retry(run, 30)
		default:
			s.tracef("%s %s: TxnOffsetCommit refused: %v", p.txnID(), run.name, kerr.ErrorForCode(code))
			run.failed = true
			p.wake(1)
		}
	})
}

// copyCrash: the copier's process dies mid-transaction (sometimes, in the
// safety phase); it starts again with a new epoch, which fences what it
// left in flight and aborts its open transaction.
func (p *txnProducer) copyCrash() bool {
	s, run := p.s, p.cur
	if run == nil || run.ending || s.phase != "safety" || s.work.IntN(100) >= 2 {
		return false
	}
	s.tracef("%s crashes in %s", p.txnID(), run.name)
	s.stats.Faults["copier-crash"]++
	s.checks.txns.ended(s, run.name, txnUnknown)
	s.checks.copies.ended(run.name, txnUnknown, s.now)
	p.cur, p.pid = nil, -1
	p.ended++
	p.wake(int64(20 + s.work.IntN(100)))
	return true
}

// startCopiers creates the copiers and their input's producers.
func (s *Sim) startCopiers(id *int32) {
	n := s.opts.copiers()
	if n == 0 {
		return
	}
	s.admin.pending = append(s.admin.pending, copyInTopic, offsetsTopic)
	for i := range n {
		*id++
		f := &producerClient{s: s, id: *id, topic: copyInTopic, part: int32(i), acks: -1, total: s.opts.CopyRecords, pid: -1}
		s.clients = append(s.clients, f)
		s.net.nodes = append(s.net.nodes, *id)
		f.wake(300 + int64(s.work.IntN(200)))
		*id++
		p := &txnProducer{s: s, id: *id, n: s.opts.TxnProducers + i, total: 1 << 30, pid: -1,
			v1: s.work.IntN(100) < s.opts.TxnV1Pct, cp: &copier{part: int32(i), feeder: f}}
		s.clients = append(s.clients, p)
		s.net.nodes = append(s.net.nodes, *id)
		p.wake(400 + int64(s.work.IntN(200)))
	}
}
