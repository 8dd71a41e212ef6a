// Package producer keeps the idempotent producer state of one partition:
// for every producer id, its epoch and the sequence numbers and offsets of
// its last five batches. With it the partition accepts a batch in sequence,
// answers a retried batch with its original offsets without storing it twice,
// and refuses a gap (OUT_OF_ORDER_SEQUENCE_NUMBER) or an old epoch
// (INVALID_PRODUCER_EPOCH).
//
// The state is derived from the log: every idempotent batch in the log
// updates it the same way (Record), so it can be rebuilt by scanning batch
// headers. A snapshot (see snapshot.go) saves that scan: it holds the state
// as of a log offset, and the partition replays only the batches after it.
//
// The package also allocates producer ids for InitProducerId (ids.go).
package producer

import (
	"fmt"
	"maps"
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
}

// Decision is the outcome of Check for a batch that is not refused.
type Decision struct {
	// Duplicate: the batch is a retry of one already in the log; do not
	// store it, answer with BaseOffset and LastOffset.
	Duplicate  bool
	BaseOffset int64
	LastOffset int64
}

// State is the producer state of one partition. It is not safe for
// concurrent use: the partition calls it under its lock, which also orders
// Check, the append and Record.
type State struct {
	producers map[int64]*Entry
}

// NewState returns an empty state.
func NewState() *State { return &State{producers: map[int64]*Entry{}} }

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
//     (wrapping from math.MaxInt32 to 0), otherwise
//     kerr.OutOfOrderSequenceNumber.
//
// Check changes nothing; call Record once the batch is in the log.
func (s *State) Check(h batch.Header) (Decision, error) {
	if !h.Idempotent() {
		return Decision{}, nil
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		return Decision{}, nil
	}
	switch {
	case h.ProducerEpoch < e.Epoch:
		return Decision{}, fmt.Errorf("producer %d: epoch %d is older than the current %d: %w",
			h.ProducerID, h.ProducerEpoch, e.Epoch, kerr.InvalidProducerEpoch)
	case h.ProducerEpoch > e.Epoch:
		if h.BaseSequence != 0 {
			return Decision{}, fmt.Errorf("producer %d: new epoch %d must start at sequence 0, not %d: %w",
				h.ProducerID, h.ProducerEpoch, h.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return Decision{}, nil
	}
	last := h.LastSequence()
	for _, b := range e.Batches {
		if b.FirstSeq == h.BaseSequence && b.LastSeq == last {
			return Decision{Duplicate: true, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset}, nil
		}
	}
	if n := len(e.Batches); n > 0 {
		if want := batch.AddSequence(e.Batches[n-1].LastSeq, 1); h.BaseSequence != want {
			return Decision{}, fmt.Errorf("producer %d epoch %d: sequence %d, expected %d: %w",
				h.ProducerID, h.ProducerEpoch, h.BaseSequence, want, kerr.OutOfOrderSequenceNumber)
		}
	}
	return Decision{}, nil
}

// Record remembers batch h, stored at offset base, in its producer's state,
// as active at nowMs (broker clock, Unix ms). The partition calls it after
// the engine accepted the batch (a batch whose append failed is never
// recorded), and when it replays the log after a snapshot (with the time of
// the replay: a restart counts as activity, which errs on remembering). A
// batch from an older epoch than the known one is ignored.
func (s *State) Record(h batch.Header, base, nowMs int64) {
	if !h.Idempotent() {
		return
	}
	e := s.producers[h.ProducerID]
	switch {
	case e == nil:
		e = &Entry{ID: h.ProducerID, Epoch: h.ProducerEpoch}
		s.producers[h.ProducerID] = e
	case h.ProducerEpoch < e.Epoch:
		return
	case h.ProducerEpoch > e.Epoch:
		e.Epoch, e.Batches = h.ProducerEpoch, e.Batches[:0]
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
	e.LastActiveMs = nowMs
}

// Expire forgets producers not active since nowMs - maxAgeMs (Kafka's
// producer.id.expiration.ms), and returns how many it forgot. A forgotten
// producer that comes back is treated as unknown.
func (s *State) Expire(nowMs, maxAgeMs int64) int {
	n := 0
	for id, e := range s.producers {
		if nowMs-e.LastActiveMs > maxAgeMs {
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
	return c
}
