package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/coordlog"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/cluster"
)

// Transactions: each broker runs the product's transaction coordinator,
// txn.Core, for every partition of __transaction_state it leads, opened
// (replaying the partition to its end, txn.Replay) when the leadership
// arrives and dropped when it leaves, as the broker's coordSet does. This
// file is the Core's driver, what txn.Coordinator's goroutines do: it
// appends through the product's compacted log (coordlog.Keyed, compaction
// off: it would start a goroutine) and reports an append committed once
// the partition's high watermark passes it at the same leadership, sends
// each marker job to the partitions' leaders (WriteTxnMarkers: the
// partition's AppendMarker, answered once the marker is committed), and
// ticks the Core at the deadline it asks for.

const (
	txnStateTopic = cluster.TransactionStateTopic
	txnTopic      = "tx"
	// coordWriteMs bounds a coordinator's wait for its append to commit
	// (the broker's offsetsCommitTimeout).
	coordWriteMs = 5000
	// markerWaitMs bounds a leader's wait for a marker to commit, and
	// the coordinator's for a leader's answer (the broker's markerWait).
	markerWaitMs = 5000
	// txnAbortIntervalMs is the coordinators' look for expired
	// transactions (the product's default is a second).
	txnAbortIntervalMs = 500
)

// txnCoord is the driver of one Core: the coordinator of one partition of
// __transaction_state, at one leadership of it.
type txnCoord struct {
	b       *broker
	r       *replica
	epoch   int32
	core    *txn.Core
	lg      *coordlog.Keyed
	writes  map[uint64]*coordWrite
	replies map[uint64]func(txn.Answer)
	next    uint64 // last request token
	tickAt  time.Time
	closed  bool
	// settling: inside settle, which answers may reenter.
	settling bool
}

type coordWrite struct {
	end, deadline int64
}

// coordLog is the coordinator's view of its partition (coordlog.Log), as
// the broker's coordLog: appends go through AppendOwn, reads to the log
// end; WaitDurable and DeleteBefore are never called (the driver polls
// the high watermark; compaction is off).
type coordLog struct{ p *partition.Partition }

func (l coordLog) Append(b []byte) (int64, error) { return l.p.AppendOwn(b) }
func (l coordLog) WaitDurable(context.Context, int64) error {
	panic("sim: a coordinator waited for its log (the driver polls the high watermark)")
}
func (l coordLog) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.p.ReadToEnd(offset, maxBytes)
}
func (l coordLog) StartOffset() int64 { return l.p.StartOffset() }
func (l coordLog) DeleteBefore(context.Context, int64) error {
	panic("sim: a coordinator compacted its log (compaction is off)")
}

// txnCoordinators opens a coordinator for each partition of
// __transaction_state this broker leads, and drops those it no longer
// leads, or leads at a later epoch than it opened them.
func (b *broker) txnCoordinators() {
	if !b.s.opts.transactions() || b.parts == nil {
		return
	}
	img := b.store.Image()
	t, ok := img.Topic(txnStateTopic)
	for _, i := range slices.Sorted(maps.Keys(b.txnCoords)) {
		c := b.txnCoords[i]
		role := c.r.p.Role()
		if !ok || !c.r.current() || !role.Local || role.LeaderEpoch != c.epoch {
			b.s.tracef("b%d closes the transaction coordinator of %s-%d epoch %d", b.id, txnStateTopic, i, c.epoch)
			c.closed = true
			delete(b.txnCoords, i)
		}
	}
	if !ok {
		return
	}
	for i := range t.Partitions {
		r := b.replicas[tp{t.ID, int32(i)}]
		if r == nil || b.txnCoords[int32(i)] != nil {
			continue
		}
		if role := r.p.Role(); role.Local {
			b.openTxnCoord(int32(i), r, role.LeaderEpoch)
		}
	}
}

func (b *broker) openTxnCoord(i int32, r *replica, epoch int32) {
	log := coordLog{r.p}
	metas, found, err := txn.Replay(log)
	if err != nil {
		b.s.violate("partition", "b%d: the transaction coordinator of %s-%d does not load: %v", b.id, txnStateTopic, i, err)
		return
	}
	c := &txnCoord{b: b, r: r, epoch: epoch, writes: map[uint64]*coordWrite{}, replies: map[uint64]func(txn.Answer){}}
	c.lg = coordlog.NewKeyed(coordlog.KeyedConfig{Log: log, Clock: simClock{b.s}, Name: txnStateTopic, CompactMinBytes: -1}, found)
	c.core = txn.NewCore(txn.CoreConfig{CoordinatorEpoch: epoch, AbortInterval: txnAbortIntervalMs * time.Millisecond, IDExpiration: -1}, metas)
	b.txnCoords[i] = c
	b.s.tracef("b%d opens the transaction coordinator of %s-%d epoch %d: %d ids", b.id, txnStateTopic, i, epoch, len(metas))
	c.perform(c.core.Start(b.s.time()))
}

// perform does what the Core asks: appends, marker jobs, answers, the next
// tick. An append that fails at once is reported at once.
func (c *txnCoord) perform(out txn.Output) {
	for !c.closed {
		var more []txn.Output
		for _, a := range out.Appends {
			end, err := c.lg.Append([]batch.KV{a.Record}, c.b.s.time())
			if err != nil {
				more = append(more, c.core.Appended(a.Token, err, c.b.s.time()))
				continue
			}
			c.writes[a.Token] = &coordWrite{end: end, deadline: c.b.s.now + coordWriteMs}
		}
		for _, j := range out.Jobs {
			c.b.sendMarkers(c, j)
		}
		for _, a := range out.Answers {
			if reply, ok := c.replies[a.Token]; ok {
				delete(c.replies, a.Token)
				reply(a)
			}
		}
		if !out.Deadline.IsZero() {
			c.tickAt = out.Deadline
		}
		if len(more) == 0 {
			return
		}
		out = txn.Output{}
		for _, m := range more {
			out.Appends = append(out.Appends, m.Appends...)
			out.Jobs = append(out.Jobs, m.Jobs...)
			out.Answers = append(out.Answers, m.Answers...)
			out.Deadline = m.Deadline
		}
	}
}

// settle reports the appends whose fate is known: committed (the high
// watermark passed them at this leadership), or failed.
func (c *txnCoord) settle() {
	if c.settling {
		return // an answer given here led back to the broker's settle
	}
	c.settling = true
	defer func() { c.settling = false }()
	for _, tok := range slices.Sorted(maps.Keys(c.writes)) {
		if c.closed {
			return
		}
		w := c.writes[tok]
		if w == nil {
			continue
		}
		var err error
		switch {
		case c.r.p.HighWatermark() >= w.end:
		case c.b.s.now >= w.deadline:
			err = kerr.RequestTimedOut
		default:
			continue
		}
		delete(c.writes, tok)
		c.perform(c.core.Appended(tok, err, c.b.s.time()))
	}
	if !c.closed && !c.tickAt.IsZero() && !c.b.s.time().Before(c.tickAt) {
		c.tickAt = time.Time{}
		c.perform(c.core.Tick(c.b.s.time()))
	}
}

// handle hands a request to the Core; reply gets its answer.
func (c *txnCoord) handle(req txn.Request, reply func(txn.Answer)) {
	c.next++
	req.Token = c.next
	c.replies[req.Token] = reply
	c.perform(c.core.Handle(req, c.b.s.time()))
}

// settleTxns moves the coordinators on after an event at this broker.
func (b *broker) settleTxns() {
	b.txnCoordinators()
	for _, i := range slices.Sorted(maps.Keys(b.txnCoords)) {
		if c := b.txnCoords[i]; c != nil && b.up {
			c.settle()
		}
	}
}

// txnCoordFor is the coordinator of transactional id here, or the code to
// answer.
func (b *broker) txnCoordFor(id string) (*txnCoord, int16) {
	img := b.store.Image()
	t, ok := img.Topic(txnStateTopic)
	if !ok {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	c := b.txnCoords[txnPartitionOf(id, len(t.Partitions))]
	if c == nil {
		return nil, kerr.NotCoordinator.Code
	}
	return c, 0
}

// txnPartitionOf is the partition of __transaction_state that owns a
// simulated producer's transactional id ("tx<n>"): n modulo the count. The
// simulator routes by it where the broker hashes the id (FindCoordinator);
// the coordinators take whichever ids they are sent.
func txnPartitionOf(id string, n int) int32 {
	var k int
	fmt.Sscanf(id, "tx%d", &k)
	return int32(k % max(n, 1))
}

// serveTxn serves a client's request to the transaction coordinator: an
// InitProducerId that needs a producer id takes one from this broker's
// block, as the broker's does.
func (b *broker) serveTxn(req txn.Request, reply func(txn.Answer)) {
	c, code := b.txnCoordFor(req.ID)
	if c == nil {
		reply(txn.Answer{ProducerID: -1, Epoch: -1, Code: code, Codes: fill(len(req.Partitions), code)})
		return
	}
	if req.Kind == txn.KindAdd {
		img := b.store.Image()
		exists := func(p txn.TopicPartition) bool {
			t, ok := img.Topic(p.Topic)
			return ok && int(p.Partition) < len(t.Partitions)
		}
		// The simulated clients write "tx" only; a partition leader asks
		// for the partition it leads (fromBroker: it may be internal).
		if refused := txn.CheckAdd(req.Partitions, exists, cluster.Internal, true); refused != nil {
			reply(txn.Answer{ProducerID: -1, Epoch: -1, Code: refused[0], Codes: refused})
			return
		}
	}
	c.handle(req, func(a txn.Answer) {
		if !a.NeedProducerID {
			reply(a)
			return
		}
		pid := b.nextPID()
		if pid < 0 || c.closed {
			reply(txn.Answer{ProducerID: -1, Epoch: -1, Code: kerr.CoordinatorNotAvailable.Code})
			return
		}
		req.NewProducerID = pid
		c.handle(req, reply)
	})
	b.settle()
}

func fill(n int, code int16) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = code
	}
	return out
}

// sendMarkers carries out marker job j of coordinator c as the broker's
// markerWriter: the job's partitions grouped by leader, as this broker's
// metadata names them, one WriteTxnMarkers to each (in process to itself);
// the job succeeds once every leader answered a code txn.MarkerResult
// accepts.
func (b *broker) sendMarkers(c *txnCoord, j txn.Job) {
	img := b.store.Image()
	byLeader := map[int32][]tp{}
	names := map[tp]txn.TopicPartition{}
	var errs []error
	for _, p := range j.Partitions {
		t, ok := img.Topic(p.Topic)
		if !ok || int(p.Partition) >= len(t.Partitions) {
			continue // deleted: no marker to write
		}
		leader := t.Partitions[p.Partition].Leader
		if leader == cluster.NoLeader {
			errs = append(errs, fmt.Errorf("%s has no leader", p))
			continue
		}
		k := tp{t.ID, p.Partition}
		byLeader[leader] = append(byLeader[leader], k)
		names[k] = p
	}
	report := func(err error) {
		b.s.tracef("b%d markers of %s (producer %d epoch %d commit=%v) to %v: %v", b.id, j.TxnID, j.ProducerID, j.Epoch, j.Commit, j.Partitions, err)
		b.later(0, "txn-markers-done", func() {
			if !c.closed {
				c.perform(c.core.MarkersWritten(j.Token, err, b.s.time()))
				b.settle()
			}
		})
	}
	if len(errs) > 0 {
		report(errors.Join(errs...))
		return
	}
	left := len(byLeader)
	if left == 0 {
		report(nil)
		return
	}
	pr := batch.Producer{ID: j.ProducerID, Epoch: j.Epoch}
	m := batch.Marker{Commit: j.Commit, CoordinatorEpoch: j.CoordinatorEpoch}
	for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
		tps := byLeader[leader]
		b.s.rpc(b.id, leader, "write-markers", markerWaitMs+200, func(reply func(any)) {
			b.s.brokers[leader-1].serveMarkers(pr, m, tps, func(codes []int16) { reply(codes) })
		}, func(resp any) {
			codes, ok := resp.([]int16)
			if !ok {
				errs = append(errs, fmt.Errorf("broker %d: no answer", leader))
			} else {
				for i, code := range codes {
					if err := txn.MarkerResult(names[tps[i]], code); err != nil {
						errs = append(errs, err)
					}
				}
			}
			if left--; left == 0 {
				report(errors.Join(errs...))
			}
		})
	}
}

// serveMarkers is WriteTxnMarkers at a partition leader: the marker
// appended to each partition of tps it leads, and each partition's code
// once the marker is committed, or its wait ends.
func (b *broker) serveMarkers(pr batch.Producer, m batch.Marker, tps []tp, reply func([]int16)) {
	codes := make([]int16, len(tps))
	w := &markerWait{codes: codes, deadline: b.s.now + markerWaitMs, reply: reply}
	for i, k := range tps {
		r := b.replicas[k]
		if r == nil {
			codes[i] = kerr.NotLeaderForPartition.Code
			continue
		}
		appendMarker := func() (int64, error) { return r.p.AppendMarker(pr, m) }
		var (
			end       int64
			committed func()
			err       error
		)
		if r.p.Topic() == offsetsTopic {
			end, committed, err = b.offsetsMarker(r, pr.ID, m.Commit, appendMarker)
		} else {
			end, err = appendMarker()
		}
		r.observe()
		b.s.tracef("b%d marker (commit=%v) of producer %d epoch %d in %s: end %d err %v", b.id, m.Commit, pr.ID, pr.Epoch, k, end, err)
		if err != nil {
			codes[i] = kafkaCode(err)
			continue
		}
		w.parts = append(w.parts, markerPart{i: i, r: r, end: end, epoch: r.p.Role().LeaderEpoch, committed: committed})
	}
	b.markerWaits = append(b.markerWaits, w)
	b.later(markerWaitMs, "marker-wait", b.settle)
	b.settle()
}

type markerWait struct {
	codes    []int16
	parts    []markerPart
	deadline int64
	reply    func([]int16)
}

type markerPart struct {
	i     int
	r     *replica
	end   int64
	epoch int32
	// committed, for a marker in __consumer_offsets: tell its group
	// coordinator.
	committed func()
}

// resolveMarkerWaits answers the marker writes whose markers are all
// committed, or whose leadership or wait ended.
func (b *broker) resolveMarkerWaits() {
	var keep []*markerWait
	for _, w := range b.markerWaits {
		var left []markerPart
		for _, p := range w.parts {
			role := p.r.p.Role()
			switch {
			case !p.r.current() || !role.Local || role.LeaderEpoch != p.epoch:
				w.codes[p.i] = kerr.NotLeaderForPartition.Code
			case p.r.p.HighWatermark() >= p.end:
				if p.committed != nil {
					p.committed()
				}
			case b.s.now >= w.deadline:
				w.codes[p.i] = kerr.RequestTimedOut.Code
			default:
				left = append(left, p)
			}
		}
		w.parts = left
		if len(left) == 0 {
			w.reply(w.codes)
			continue
		}
		keep = append(keep, w)
	}
	b.markerWaits = keep
}

// kafkaCode is the Kafka error code of a partition's error.
func kafkaCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(kafkaErr(err), &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// txnsPending describes a transaction some coordinator has not completed
// yet, "" when none has one.
func (s *Sim) txnsPending(live []*broker) string {
	for _, b := range live {
		for _, i := range slices.Sorted(maps.Keys(b.txnCoords)) {
			for _, m := range b.txnCoords[i].core.Metas() {
				if m.State == txn.Ongoing || m.State == txn.PrepareCommit || m.State == txn.PrepareAbort || m.State == txn.PrepareEpochFence {
					return fmt.Sprintf("b%d: transaction of %s in state %d", b.id, m.ID, m.State)
				}
			}
		}
	}
	return ""
}

// readCommittedAll reads every partition of "tx" from its start with
// read_committed at its leader, as a consumer would at the end of the run:
// the values shown, by partition, and the partitions whose last stable
// offset is below their high watermark.
func (s *Sim) readCommittedAll() (map[string][]string, []string) {
	visible := map[string][]string{}
	var hanging []string
	for _, b := range s.brokers {
		if !b.up {
			continue
		}
		t, ok := b.store.Image().Topic(txnTopic)
		if !ok {
			continue
		}
		for i, pt := range t.Partitions {
			k := tp{t.ID, int32(i)}
			r := b.replicas[k]
			if pt.Leader != b.id || r == nil || !r.p.Role().Local {
				continue
			}
			if lso, hw := r.p.LastStableOffset(), r.p.HighWatermark(); lso < hw {
				hanging = append(hanging, fmt.Sprintf("%s-%d (%s) has its last stable offset at %d, its high watermark at %d", txnTopic, i, k, lso, hw))
			}
			var vals []string
			for pos := r.p.StartOffset(); ; {
				rd := b.serveReadCommitted(k, pos)
				if rd.err != nil || len(rd.batches) == 0 {
					break
				}
				pos = readCommitted(s, rd, func(_ int64, v []byte) { vals = append(vals, string(v)) }, pos)
			}
			visible[k.String()] = vals
		}
	}
	return visible, hanging
}
