package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/batch/batchcodec"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
)

// Transactional clients. A producer, as a Kafka client does: it gets its
// producer id and epoch from the coordinator of its transactional id
// (InitProducerId), then runs transactions one after another: it writes a
// batch to each of a few partitions of topic "tx" at once (on the first
// transaction version after AddPartitionsToTxn; on the second the write
// adds the partition, KIP-890), retries each write with the same sequence
// until it is acknowledged, and commits or aborts (EndTxn). A write not
// acknowledged within Options.TxnGiveUpMs, or refused for good, fails the
// transaction: it is aborted, and the producer starts over with a new
// epoch (InitProducerId, KIP-360), so that its failed write, if it lands
// late, is fenced. Each record names its transaction, so that the checkers
// know what a consumer reads. A read_committed consumer reads a partition
// to its last stable offset and drops the records of aborted transactions,
// as Kafka's consumer does, from the aborted list each fetch returns.

const (
	txnTimeoutMs = 3000 // the producers' transaction.timeout.ms
	txnRPCMs     = 800
)

type txnProducer struct {
	s        *Sim
	id       int32
	n        int // the producer's number: its transactional id is tx<n>
	v1       bool
	total    int
	ended    int
	started  int // transactions begun, for their names
	pid      int64
	epoch    int16
	seqs     map[int32]int32 // next sequence by partition, at this epoch
	cur      *txnRun
	finished bool
	cp       *copier // a copier's (copier.go); nil for a producer
}

// txnRun is one transaction of a producer.
type txnRun struct {
	name    string
	writes  []*txnWrite
	added   bool // v1: AddPartitionsToTxn answered
	start   int64
	failed  bool
	ending  bool
	commit  bool
	settled bool     // no more answers are wanted
	copy    *copyRun // a copier's
}

type txnWrite struct {
	part   int32
	values [][]byte
	data   []byte
	acked  bool
	busy   bool
}

func (p *txnProducer) txnID() string { return fmt.Sprintf("tx%d", p.n) }
func (p *txnProducer) done() bool    { return p.finished }
func (p *txnProducer) describe() string {
	if p.cp != nil {
		return fmt.Sprintf("copier %s of %s-%d (v1=%v): %d transactions ended, pid %d epoch %d", p.txnID(), copyInTopic, p.cp.part, p.v1, p.ended, p.pid, p.epoch)
	}
	return fmt.Sprintf("transactional producer %s (v1=%v): %d of %d transactions ended, pid %d epoch %d", p.txnID(), p.v1, p.ended, p.total, p.pid, p.epoch)
}

func (p *txnProducer) wake(delay int64) { p.s.at(delay, "txn-producer", p.step) }

// coordinator is the broker the client's metadata names as its
// coordinator (FindCoordinator), or -1.
func (p *txnProducer) coordinator(img *cluster.Metadata) int32 {
	t, ok := img.Topic(txnStateTopic)
	if !ok {
		return -1
	}
	leader := t.Partitions[txnPartitionOf(p.txnID(), len(t.Partitions))].Leader
	if leader == cluster.NoLeader {
		return -1
	}
	return leader
}

// call sends req to the coordinator; done gets nil when no answer came.
func (p *txnProducer) call(kind string, req txn.Request, done func(*txn.Answer)) {
	s := p.s
	img := s.metadata(p.id)
	if img == nil {
		done(nil)
		return
	}
	to := p.coordinator(img)
	if to < 0 {
		done(nil)
		return
	}
	req.ID = p.txnID()
	s.rpc(p.id, to, kind, txnRPCMs, func(reply func(any)) {
		s.brokers[to-1].serveTxn(req, func(a txn.Answer) { reply(a) })
	}, func(resp any) {
		if a, ok := resp.(txn.Answer); ok {
			done(&a)
			return
		}
		done(nil)
	})
}

func (p *txnProducer) step() {
	s := p.s
	if p.finished || s.stopped {
		return
	}
	switch {
	case p.pid < 0:
		p.initPID()
	case p.cur == nil:
		if p.ended >= p.total {
			p.finished = true
			return
		}
		if p.cp != nil {
			p.copyBegin()
			return
		}
		p.begin()
		p.step()
	case p.cp != nil && p.copyCrash():
	case p.cur.ending:
		p.endTxn()
	case p.cur.failed:
		p.cur.ending, p.cur.commit = true, false
		p.endTxn()
	case p.v1 && !p.cur.added:
		p.addPartitions()
	case p.v1 && p.cur.copy != nil && !p.cur.copy.offsetsAdded:
		p.addOffsets()
	default:
		p.produce()
	}
}

func (p *txnProducer) initPID() {
	req := txn.Request{Kind: txn.KindInit, Init: txn.InitRequest{Timeout: txnTimeoutMs * time.Millisecond,
		ProducerID: -1, Epoch: -1, Fenced: kerr.ProducerFenced.Code}}
	p.call("txn-init", req, func(a *txn.Answer) {
		if a == nil || a.Code != 0 {
			p.wake(50)
			return
		}
		p.s.tracef("%s init: producer %d epoch %d", p.txnID(), a.ProducerID, a.Epoch)
		p.pid, p.epoch, p.seqs = a.ProducerID, a.Epoch, map[int32]int32{}
		p.wake(1)
	})
}

// begin starts the next transaction: a batch for each of a few partitions.
func (p *txnProducer) begin() {
	s := p.s
	p.started++
	run := &txnRun{name: fmt.Sprintf("x%d-t%d", p.n, p.started), start: s.now}
	parts := s.work.Perm(s.opts.TxnPartitions)[:1+s.work.IntN(s.opts.TxnPartitions)]
	slices.Sort(parts)
	for _, part := range parts {
		var values [][]byte
		for i := range 1 + s.work.IntN(2) {
			values = append(values, []byte(fmt.Sprintf("%s-p%d-r%d", run.name, part, i)))
		}
		run.writes = append(run.writes, p.txnWrite(int32(part), values))
	}
	p.cur = run
}

// txnWrite is the transaction's batch of values for partition part of
// "tx", next in the producer's sequence there.
func (p *txnProducer) txnWrite(part int32, values [][]byte) *txnWrite {
	data, err := batchcodec.Build(batchcodec.Spec{
		Values: values, Timestamp: p.s.now, Idempotent: true, ExtraAttributes: 0x10, // transactional
		ProducerID: p.pid, ProducerEpoch: p.epoch, BaseSequence: p.seqs[part],
	})
	if err != nil {
		panic(err)
	}
	p.seqs[part] += int32(len(values))
	return &txnWrite{part: part, values: values, data: data}
}

func (p *txnProducer) addPartitions() {
	run := p.cur
	var tps []txn.TopicPartition
	for _, w := range run.writes {
		tps = append(tps, txn.TopicPartition{Topic: txnTopic, Partition: w.part})
	}
	p.add("txn-add", tps, func() { run.added = true })
}

// add adds tps to the transaction (AddPartitionsToTxn, AddOffsetsToTxn):
// added runs once the coordinator has.
func (p *txnProducer) add(kind string, tps []txn.TopicPartition, added func()) {
	run := p.cur
	req := txn.Request{Kind: txn.KindAdd, Producer: txn.Producer{ID: p.pid, Epoch: p.epoch, Fenced: kerr.ProducerFenced.Code}, Partitions: tps}
	p.call(kind, req, func(a *txn.Answer) {
		if p.cur != run {
			return
		}
		switch {
		case a != nil && a.Code == 0:
			added()
			p.wake(1)
		case a == nil || retriableTxn(a.Code):
			p.retry(run, 50)
		default:
			p.s.tracef("%s %s: %s refused: %v", p.txnID(), run.name, kind, kerr.ErrorForCode(a.Code))
			run.failed = true
			p.wake(1)
		}
	})
}

// retriableTxn: a coordinator's answer the client tries again after.
func retriableTxn(code int16) bool {
	switch code {
	case kerr.ConcurrentTransactions.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code, kerr.UnknownTopicOrPartition.Code, kerr.OperationNotAttempted.Code:
		return true
	}
	return false
}

// retry tries the transaction's next step again, unless it has run for
// longer than the client gives it: then it fails.
func (p *txnProducer) retry(run *txnRun, delay int64) {
	if p.s.now-run.start > p.s.opts.TxnGiveUpMs && !run.ending {
		run.failed = true
	}
	p.wake(delay)
}

// produce sends every write not yet acknowledged nor in flight.
func (p *txnProducer) produce() {
	s := p.s
	run := p.cur
	img := s.metadata(p.id)
	left := 0
	for _, w := range run.writes {
		if w.acked {
			continue
		}
		left++
		if w.busy {
			continue
		}
		k, leader, ok := leaderIn(img, txnTopic, w.part)
		if !ok {
			p.retry(run, 50)
			return
		}
		w.busy = true
		w := w
		req := produceReq{tp: k, acks: -1, data: w.data, txnID: p.txnID(), topic: txnTopic, add: !p.v1}
		s.rpc(p.id, leader, "txn-produce", txnRPCMs, func(reply func(any)) {
			s.brokers[leader-1].serveProduce(req, func(r produceResp) { reply(r) })
		}, func(resp any) {
			w.busy = false
			if p.cur != run || run.failed || run.ending {
				return
			}
			r, ok := resp.(produceResp)
			switch {
			case ok && r.err == nil:
				w.acked = true
				s.tracef("%s %s: write to %s acked at %d by b%d", p.txnID(), run.name, k, r.base, leader)
				s.checks.txns.acked(run.name, w.values)
				p.wake(0)
			case !ok || retriableProduce(r.err):
				p.retry(run, 20)
			default:
				s.tracef("%s %s: the write to %s refused: %v", p.txnID(), run.name, k, r.err)
				run.failed = true
				p.wake(1)
			}
		})
	}
	if left == 0 && run.copy != nil && !run.copy.offsetsDone {
		p.commitOffsets()
		return
	}
	if left == 0 {
		run.ending = true
		// A copier commits whatever it copies once the faults have healed:
		// the liveness phase asks it to finish its input.
		run.commit = (run.copy != nil && s.phase != "safety") || s.work.IntN(100) >= s.opts.TxnAbortPct
		p.endTxn()
	}
}

func retriableProduce(err error) bool {
	for _, e := range []error{kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend,
		kerr.RequestTimedOut, kerr.ConcurrentTransactions, kerr.UnknownTopicOrPartition, kerr.KafkaStorageError} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// endTxn commits or aborts the transaction; a failed one is aborted and
// the producer starts over with a new epoch.
func (p *txnProducer) endTxn() {
	run := p.cur
	run.ending = true
	if !run.commit && !slices.ContainsFunc(run.writes, func(w *txnWrite) bool { return w.acked || w.busy }) && p.v1 && !run.added {
		p.finish(run, txnAborted, run.failed) // nothing was sent; refused: start over with a new epoch
		return
	}
	req := txn.Request{Kind: txn.KindEnd, Producer: txn.Producer{ID: p.pid, Epoch: p.epoch, Fenced: kerr.ProducerFenced.Code},
		Commit: run.commit, TV2: !p.v1}
	p.call("txn-end", req, func(a *txn.Answer) {
		if p.cur != run {
			return
		}
		switch {
		case a != nil && a.Code == 0:
			outcome := txnAborted
			if run.commit {
				outcome = txnCommitted
			}
			if !p.v1 {
				p.epoch, p.seqs = a.Epoch, map[int32]int32{}
			}
			p.finish(run, outcome, run.failed)
		case a == nil || retriableTxn(a.Code):
			p.wake(50)
		default:
			// Fenced (the coordinator aborted it past its timeout), or a
			// state the client cannot act on: what became of it is not
			// the client's to know.
			s := p.s
			s.tracef("%s %s: EndTxn(commit=%v) refused: %v", p.txnID(), run.name, run.commit, kerr.ErrorForCode(a.Code))
			p.finish(run, txnUnknown, true)
		}
	})
}

// finish ends run with outcome; reinit: start over with a new epoch.
func (p *txnProducer) finish(run *txnRun, outcome txnOutcome, reinit bool) {
	p.s.tracef("%s %s ends: %s (failed=%v)", p.txnID(), run.name, outcome, run.failed)
	p.s.checks.txns.ended(p.s, run.name, outcome)
	if run.copy != nil {
		p.s.checks.copies.ended(run.name, outcome, p.s.now)
	}
	p.cur = nil
	p.ended++
	if reinit {
		p.pid = -1
	}
	p.wake(int64(1 + p.s.work.IntN(20)))
}

// txnConsumer reads one partition of "tx" with isolation.level
// read_committed.
type txnConsumer struct {
	s    *Sim
	id   int32
	part int32
	pos  int64
}

func (c *txnConsumer) done() bool { return true }
func (c *txnConsumer) describe() string {
	return fmt.Sprintf("read_committed consumer %d of %s-%d at %d", c.id, txnTopic, c.part, c.pos)
}

func (c *txnConsumer) step() {
	s := c.s
	if s.stopped {
		return
	}
	again := func(d int64) { s.at(d, "txn-consumer", c.step) }
	k, leader, ok := leaderIn(s.metadata(c.id), txnTopic, c.part)
	if !ok {
		again(50)
		return
	}
	pos := c.pos
	s.rpc(c.id, leader, "consume-rc", 300, func(reply func(any)) {
		reply(s.brokers[leader-1].serveReadCommitted(k, pos))
	}, func(resp any) {
		r, ok := resp.(committedRead)
		if !ok || r.err != nil || pos != c.pos {
			again(30)
			return
		}
		if len(r.batches) > 0 {
			s.tracef("consumer %d reads %s from %d at b%d: lso %d hw %d, %d batches, aborted %v", c.id, k, pos, leader, r.lso, r.hw, len(r.batches), r.aborted)
		}
		c.pos = readCommitted(s, r, func(off int64, value []byte) { s.checks.txns.read(s, c.id, k, off, value) }, pos)
		again(int64(10 + s.work.IntN(40)))
	})
}

// committedRead is a read_committed fetch's answer.
type committedRead struct {
	err     error
	lso, hw int64
	batches [][]byte
	aborted []partition.Aborted
}

// serveReadCommitted answers a read_committed fetch, as the broker's Fetch
// handler: the leader's partition reads whole batches below the last
// stable offset and the aborted transactions among them.
func (b *broker) serveReadCommitted(k tp, offset int64) committedRead {
	r := b.replicas[k]
	if r == nil || !r.p.Role().Local {
		return committedRead{err: kerr.NotLeaderForPartition}
	}
	rd, err := r.p.ReadCommitted(offset, fetchMaxBytes, nil)
	if err != nil {
		return committedRead{err: kafkaErr(err)}
	}
	if len(rd.Records) == 0 {
		return committedRead{}
	}
	bs, err := batch.Split(rd.Records)
	if err != nil {
		b.s.violate("corrupt-read", "b%d %s: a read_committed read at %d does not split into batches: %v", b.id, k, offset, err)
		return committedRead{err: err}
	}
	return committedRead{batches: bs, aborted: rd.Aborted, lso: rd.LastStableOffset, hw: rd.HighWatermark}
}

// readCommitted is the consumer's side of read_committed, Kafka's: the
// records of r in offset order, without those of aborted transactions
// (a producer's transactional batches from the first offset of one of its
// aborted transactions to that transaction's abort marker) and without
// control batches. It returns the position after the read.
func readCommitted(s *Sim, r committedRead, deliver func(off int64, value []byte), pos int64) int64 {
	from := pos
	aborted := slices.Clone(r.aborted)
	slices.SortFunc(aborted, func(a, b partition.Aborted) int { return int(a.First - b.First) })
	skipping := map[int64]bool{}
	for _, b := range r.batches {
		h, err := batch.ParseHeader(b)
		if err != nil {
			s.violate("corrupt-read", "a read_committed batch does not parse: %v", err)
			return pos
		}
		for len(aborted) > 0 && aborted[0].First <= h.LastOffset() {
			skipping[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		pos = max(pos, h.LastOffset()+1)
		if h.Attributes.Control() {
			if m, err := batch.ParseMarker(b); err == nil && !m.Commit {
				delete(skipping, h.ProducerID)
			}
			continue
		}
		if h.Attributes.Transactional() && skipping[h.ProducerID] {
			continue
		}
		for _, rec := range decode(s, [][]byte{b}) {
			if rec.Offset >= from {
				deliver(rec.Offset, rec.Value)
			}
		}
	}
	return pos
}

// startTxnWorkload creates the transactional clients.
func (s *Sim) startTxnWorkload(id *int32) {
	o := s.opts
	if !o.transactions() {
		return
	}
	s.admin.pending = append(s.admin.pending, txnStateTopic, txnTopic)
	for i := range o.TxnProducers {
		*id++
		p := &txnProducer{s: s, id: *id, n: i, total: o.TxnsEach, pid: -1, v1: s.work.IntN(100) < o.TxnV1Pct}
		s.clients = append(s.clients, p)
		s.net.nodes = append(s.net.nodes, *id)
		p.wake(300 + int64(s.work.IntN(200)))
	}
	s.startCopiers(id)
	if !o.TxnConsumers {
		return
	}
	for i := range o.TxnPartitions {
		*id++
		c := &txnConsumer{s: s, id: *id, part: int32(i)}
		s.clients = append(s.clients, c)
		s.net.nodes = append(s.net.nodes, *id)
		s.at(300, "txn-consumer", c.step)
	}
}
