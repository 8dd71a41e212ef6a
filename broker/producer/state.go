// Package producer keeps the idempotent producer state of one partition:
// for every producer id, its epoch and the sequence numbers and offsets of
// its last five batches. With it the partition accepts a batch in sequence,
// answers a retried batch with its original offsets without storing it twice,
// and refuses a gap (OUT_OF_ORDER_SEQUENCE_NUMBER) or an old epoch
// (INVALID_PRODUCER_EPOCH).
//
// It also keeps the partition's transactions: which producers have a
// transaction open here and from which offset, which ended (a marker,
// RecordMarker) but may not be committed yet, and the aborted ones, so that
// the partition can answer its last stable offset (FirstUnstable) and the
// aborted transactions a read_committed fetch must skip (Aborted).
//
// The state is derived from the log: every idempotent batch in the log
// updates it the same way (Record, RecordMarker), so it can be rebuilt by
// scanning batch headers and markers. A snapshot (see snapshot.go) saves that scan: it holds the state
// as of a log offset, and the partition replays only the batches after it.
//
// The package also allocates producer ids for InitProducerId (ids.go).
package producer

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
)

// Window is how many of a producer's most recent batches are remembered for
// duplicate detection: Kafka's max.in.flight.requests.per.connection limit
// for idempotent producers.
const Window = 5

// BatchInfo is what is remembered of one accepted batch.
type BatchInfo struct {
	FirstSeq   int32
	LastSeq    int32
	BaseOffset int64
	LastOffset int64
}

// Entry is one producer's state.
type Entry struct {
	ID    int64
	Epoch int16
	// Batches are the last Window batches, oldest first.
	Batches []BatchInfo
	// LastActiveMs is when (broker clock, Unix ms) the producer's last batch
	// was recorded: what Expire measures age against. Kafka uses the batch's
	// own max timestamp instead, which forgets at once a producer that writes
	// old CreateTime timestamps (a mirror, a replay) and so silently drops its
	// duplicate protection; the broker's clock does not depend on the client.
	LastActiveMs int64
	// TxnFirst is the offset of the first batch of the producer's
	// transaction open in this partition, -1 while none is.
	TxnFirst int64
	// CoordinatorEpoch is that of the last marker written for the producer
	// (-1: none yet): a marker from an older coordinator is refused.
	CoordinatorEpoch int32
}

// Txn is one transaction's span in the partition: from its first batch to
// its marker, both inclusive.
type Txn struct {
	ProducerID int64
	First      int64
	Last       int64 // the marker's offset
}

// Decision is the outcome of Check for a batch that is not refused.
type Decision struct {
	// Duplicate: the batch is a retry of one already in the log; do not
	// store it, answer with BaseOffset and LastOffset.
	Duplicate  bool
	BaseOffset int64
	LastOffset int64
	// StartsTxn: the batch opens its producer's transaction in this
	// partition. KIP-890: it may be appended only once the transaction
	// coordinator has said the partition is part of that transaction;
	// otherwise a late or stray write would open a transaction no marker
	// ever ends, and hold back the last stable offset for good.
	StartsTxn bool
}

// State is the producer state of one partition. It is not safe for
// concurrent use: the partition calls it under its lock, which also orders
// Check, the append and Record.
type State struct {
	producers map[int64]*Entry
	// open indexes the producers whose TxnFirst is set: TxnFirst by id.
	open map[int64]int64
	// ended are transactions whose marker is in the log, by marker offset,
	// until FirstUnstable finds the marker committed.
	ended []Txn
	// aborted are the aborted transactions, by marker offset, until the log
	// start passes their marker (PruneAborted).
	aborted []Txn
}

// NewState returns an empty state.
func NewState() *State { return &State{producers: map[int64]*Entry{}, open: map[int64]int64{}} }

// Check decides what to do with batch h before it is appended:
//
//   - not idempotent (producer id -1): accept;
//   - unknown producer: accept whatever the sequence, as Kafka does (the
//     state may have expired; there is nothing to compare with);
//   - epoch older than the producer's: kerr.InvalidProducerEpoch;
//   - epoch newer: the sequence restarts, so it must be 0, otherwise
//     kerr.OutOfOrderSequenceNumber;
//   - same epoch and the same first and last sequence as one of the last
//     Window batches: a duplicate, with that batch's offsets;
//   - same epoch: the first sequence must follow the last one accepted
//     (wrapping from math.MaxInt32 to 0), or be 0 when none was at this
//     epoch (a marker moved the producer to it), otherwise
//     kerr.OutOfOrderSequenceNumber.
//
// Transactions add:
//
//   - a transactional batch of a producer with no transaction open here, or
//     at a newer epoch: accepted with StartsTxn set;
//   - a transactional batch at a newer epoch than an open transaction's:
//     kerr.ConcurrentTransactions, which clients retry (under KIP-890's
//     second part the producer begins its next transaction, at the bumped
//     epoch, as soon as the last one is decided, and its first write can
//     reach a partition before the marker that ends the last one there);
//   - a plain idempotent batch of a producer with a transaction open:
//     kerr.InvalidTxnState;
//   - a transactional batch with base sequence -1 is the broker's own (the
//     group coordinator's offsets in a transaction): it is checked for its
//     epoch only, and never counted as a producer's sequence.
//
// Check changes nothing; call Record once the batch is in the log.
func (s *State) Check(h batch.Header) (Decision, error) {
	if !h.Idempotent() {
		return Decision{}, nil
	}
	txn := h.Attributes.Transactional()
	e := s.producers[h.ProducerID]
	if e == nil {
		return Decision{StartsTxn: txn}, nil
	}
	switch {
	case h.ProducerEpoch < e.Epoch:
		return Decision{}, fmt.Errorf("producer %d: epoch %d is older than the current %d: %w",
			h.ProducerID, h.ProducerEpoch, e.Epoch, kerr.InvalidProducerEpoch)
	case !txn && e.TxnFirst >= 0:
		return Decision{}, fmt.Errorf("producer %d: a batch outside the transaction it has open since offset %d: %w",
			h.ProducerID, e.TxnFirst, kerr.InvalidTxnState)
	case txn && e.TxnFirst >= 0 && h.ProducerEpoch > e.Epoch:
		return Decision{}, fmt.Errorf("producer %d: epoch %d before the marker of its transaction at epoch %d: %w",
			h.ProducerID, h.ProducerEpoch, e.Epoch, kerr.ConcurrentTransactions)
	}
	d := Decision{StartsTxn: txn && e.TxnFirst < 0}
	if txn && h.BaseSequence < 0 {
		return d, nil
	}
	switch {
	case h.ProducerEpoch > e.Epoch:
		if h.BaseSequence != 0 {
			return Decision{}, fmt.Errorf("producer %d: new epoch %d must start at sequence 0, not %d: %w",
				h.ProducerID, h.ProducerEpoch, h.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return d, nil
	}
	last := h.LastSequence()
	for _, b := range e.Batches {
		if b.FirstSeq == h.BaseSequence && b.LastSeq == last {
			return Decision{Duplicate: true, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset}, nil
		}
	}
	want := int32(0) // a marker moved the producer to this epoch: it starts over
	if n := len(e.Batches); n > 0 {
		want = batch.AddSequence(e.Batches[n-1].LastSeq, 1)
	}
	if h.BaseSequence != want {
		return Decision{}, fmt.Errorf("producer %d epoch %d: sequence %d, expected %d: %w",
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, want, kerr.OutOfOrderSequenceNumber)
	}
	return d, nil
}

// Record remembers batch h, stored at offset base, in its producer's state,
// as active at nowMs (broker clock, Unix ms). The partition calls it after
// the engine accepted the batch (a batch whose append failed is never
// recorded), and when it replays the log after a snapshot (with the time of
// the replay: a restart counts as activity, which errs on remembering). A
// batch from an older epoch than the known one is ignored. A transactional
// batch opens its producer's transaction here unless one is open. Control
// batches go to RecordMarker instead.
func (s *State) Record(h batch.Header, base, nowMs int64) {
	if !h.Idempotent() || h.Attributes.Control() {
		return
	}
	e := s.entry(h.ProducerID, h.ProducerEpoch)
	if e == nil {
		return
	}
	e.LastActiveMs = nowMs
	if h.Attributes.Transactional() && e.TxnFirst < 0 {
		e.TxnFirst = base
		s.open[e.ID] = base
	}
	if h.Attributes.Transactional() && h.BaseSequence < 0 {
		return // the broker's own batch: no sequence
	}
	info := BatchInfo{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		BaseOffset: base, LastOffset: base + int64(h.LastOffsetDelta),
	}
	if len(e.Batches) == Window {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:Window-1]
	}
	e.Batches = append(e.Batches, info)
}

// entry is producer id's entry at epoch, created or moved to epoch (its
// sequences restart); nil when epoch is older than the producer's.
func (s *State) entry(id int64, epoch int16) *Entry {
	e := s.producers[id]
	switch {
	case e == nil:
		e = &Entry{ID: id, Epoch: epoch, TxnFirst: -1, CoordinatorEpoch: -1}
		s.producers[id] = e
	case epoch < e.Epoch:
		return nil
	case epoch > e.Epoch:
		e.Epoch, e.Batches = epoch, e.Batches[:0]
	}
	return e
}

// CheckMarker decides whether a marker for producer id at epoch, from the
// coordinator at coordinatorEpoch, may be written: not from an older
// coordinator than the producer's last marker's
// (kerr.TransactionCoordinatorFenced), nor at an older producer epoch
// (kerr.InvalidProducerEpoch). A marker with no transaction open is
// written all the same: a coordinator that retries after a failover
// writes some twice, and a reader skips markers.
func (s *State) CheckMarker(id int64, epoch int16, coordinatorEpoch int32) error {
	e := s.producers[id]
	switch {
	case e == nil:
		return nil
	case coordinatorEpoch < e.CoordinatorEpoch:
		return fmt.Errorf("producer %d: marker from coordinator epoch %d, older than %d: %w",
			id, coordinatorEpoch, e.CoordinatorEpoch, kerr.TransactionCoordinatorFenced)
	case epoch < e.Epoch:
		return fmt.Errorf("producer %d: marker at epoch %d, older than %d: %w", id, epoch, e.Epoch, kerr.InvalidProducerEpoch)
	}
	return nil
}

// RecordMarker records the marker of h's producer at offset off: it ends
// the producer's open transaction here (aborted ones are kept for
// Aborted), and moves the producer to the marker's epoch, which a
// coordinator bumps at each transaction's end (KIP-890) so that a late
// write of the ended transaction is refused. A marker of an older epoch
// than the producer's is ignored, like any batch.
func (s *State) RecordMarker(h batch.Header, m batch.Marker, off, nowMs int64) {
	e := s.entry(h.ProducerID, h.ProducerEpoch)
	if e == nil {
		return
	}
	e.LastActiveMs = nowMs
	e.CoordinatorEpoch = max(e.CoordinatorEpoch, m.CoordinatorEpoch)
	if e.TxnFirst < 0 {
		return
	}
	t := Txn{ProducerID: e.ID, First: e.TxnFirst, Last: off}
	s.ended = append(s.ended, t)
	if !m.Commit {
		s.aborted = append(s.aborted, t)
	}
	e.TxnFirst = -1
	delete(s.open, e.ID)
}

// FirstUnstable is the first offset of a transaction that is open, or
// whose marker is not below hw (the high watermark) yet: the last stable
// offset is the lesser of it and hw. ok is false when there is none. It
// forgets the ended transactions whose markers are below hw.
func (s *State) FirstUnstable(hw int64) (first int64, ok bool) {
	i := 0
	for i < len(s.ended) && s.ended[i].Last < hw {
		i++
	}
	s.ended = s.ended[i:]
	first = math.MaxInt64
	for _, t := range s.ended {
		first = min(first, t.First)
	}
	for _, f := range s.open {
		first = min(first, f)
	}
	return first, first != math.MaxInt64
}

// Unstable is how many transactions are open or ended but not yet known
// stable: 0 means the last stable offset is the high watermark.
func (s *State) Unstable() int { return len(s.open) + len(s.ended) }

// Aborted returns the aborted transactions a read from offset up to (not
// including) upper must know of: those whose marker is at or after offset
// and whose first batch is before upper, by marker offset.
func (s *State) Aborted(offset, upper int64) []Txn {
	i, _ := slices.BinarySearchFunc(s.aborted, offset, func(t Txn, off int64) int { return cmp.Compare(t.Last, off) })
	var out []Txn
	for _, t := range s.aborted[i:] {
		if t.First < upper {
			out = append(out, t)
		}
	}
	return out
}

// HasAborted reports whether any aborted transaction is remembered.
func (s *State) HasAborted() bool { return len(s.aborted) > 0 }

// PruneAborted forgets the aborted transactions whose markers are below
// start, the log start: no read can reach them.
func (s *State) PruneAborted(start int64) {
	i := 0
	for i < len(s.aborted) && s.aborted[i].Last < start {
		i++
	}
	s.aborted = slices.Clip(s.aborted[i:])
}

// Expire forgets producers not active since nowMs - maxAgeMs (Kafka's
// producer.id.expiration.ms), and returns how many it forgot. A forgotten
// producer that comes back is treated as unknown. A producer with a
// transaction open is kept: its coordinator ends it.
func (s *State) Expire(nowMs, maxAgeMs int64) int {
	n := 0
	for id, e := range s.producers {
		if nowMs-e.LastActiveMs > maxAgeMs && e.TxnFirst < 0 {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Producer returns a copy of one producer's state.
func (s *State) Producer(id int64) (Entry, bool) {
	e, ok := s.producers[id]
	if !ok {
		return Entry{}, false
	}
	c := *e
	c.Batches = slices.Clone(e.Batches)
	return c, true
}

// Len is the number of producers known.
func (s *State) Len() int { return len(s.producers) }

// Entries returns a copy of every producer's state, by ascending id.
func (s *State) Entries() []Entry {
	ids := slices.Sorted(maps.Keys(s.producers))
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		e, _ := s.Producer(id)
		out = append(out, e)
	}
	return out
}

// Clone returns an independent copy of the state.
func (s *State) Clone() *State {
	c := NewState()
	for id := range s.producers {
		e, _ := s.Producer(id)
		c.producers[id] = &e
	}
	maps.Copy(c.open, s.open)
	c.ended = slices.Clone(s.ended)
	c.aborted = slices.Clone(s.aborted)
	return c
}
