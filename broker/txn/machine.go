package txn

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The transitions of one transactional id, as pure functions: the current
// meta (nil when the id is unknown) and a request in, a Step out. The
// Coordinator writes Step.Next to __transaction_state, waits until it is
// committed, then makes it the id's meta and answers Step.Code; with
// Step.Markers it then writes the transaction's markers and, once they are
// all in, the Complete state (completed).
//
// The states follow Kafka's: Empty -> Ongoing (AddPartitions) ->
// PrepareCommit | PrepareAbort (EndTxn, or a timeout, or a fence) ->
// CompleteCommit | CompleteAbort (markers written) -> Ongoing (the next
// transaction) ...; InitProducerId moves a decided transaction to Empty
// with a new epoch, and aborts an undecided one first.

// Step is what a transition asks of the coordinator.
type Step struct {
	// Next is the meta to write and then keep; nil: nothing to write.
	Next *Meta
	// Code is the answer's error code (0: none).
	Code int16
	// Markers: once Next is committed, write the markers of its
	// transaction (Next is PrepareCommit or PrepareAbort).
	Markers bool
}

func fail(e *kerr.Error) Step { return Step{Code: e.Code} }

// pending reports whether m's transaction is being decided: its markers
// are under way, and requests must wait (CONCURRENT_TRANSACTIONS).
func pending(m *Meta) bool {
	return m.State == PrepareCommit || m.State == PrepareAbort || m.State == PrepareEpochFence
}

// InitRequest is an InitProducerId with a transactional id.
type InitRequest struct {
	Timeout time.Duration
	// ProducerID and Epoch are the producer's current ones, -1 for a new
	// producer (KIP-360: a producer recovering from an error keeps its id).
	ProducerID int64
	Epoch      int16
	// Fenced is the code for a producer that lost its id to another
	// (PRODUCER_FENCED from InitProducerId v4, INVALID_PRODUCER_EPOCH before).
	Fenced int16
}

// initProducer gives the producer of m's id its producer id and a new
// epoch, fencing every earlier instance. newID allocates a producer id.
func initProducer(m *Meta, id string, in InitRequest, now time.Time, maxTimeout time.Duration, newID func() (int64, error)) (Step, error) {
	if in.Timeout <= 0 || in.Timeout > maxTimeout {
		return fail(kerr.InvalidTransactionTimeout), nil
	}
	if m == nil || m.State == Dead {
		pid, err := newID()
		if err != nil {
			return Step{}, err
		}
		return Step{Next: &Meta{
			ID: id, ProducerID: pid, Epoch: 0, LastEpoch: -1, PrevProducerID: -1,
			Timeout: in.Timeout, State: Empty, Partitions: map[TopicPartition]struct{}{}, Update: now,
		}}, nil
	}
	if in.ProducerID >= 0 {
		switch {
		case in.ProducerID == m.ProducerID && in.Epoch == m.Epoch:
		case in.ProducerID == m.ProducerID && in.Epoch == m.LastEpoch && !pending(m) && m.State != Ongoing:
			// A retry of the InitProducerId that made m: its answer again.
			return Step{Next: nil, Code: 0}, nil
		case in.ProducerID == m.PrevProducerID && m.Epoch == 0 && !pending(m):
			return Step{}, nil // a retry across the id's roll-over
		default:
			return Step{Code: in.Fenced}, nil
		}
	}
	if pending(m) {
		return fail(kerr.ConcurrentTransactions), nil
	}
	if m.State == Ongoing {
		// Fence the producer and abort what it left: it retries
		// (CONCURRENT_TRANSACTIONS) and gets a new epoch once the abort
		// is complete.
		next := bump(m, now)
		next.State = PrepareAbort
		return Step{Next: next, Code: kerr.ConcurrentTransactions.Code, Markers: true}, nil
	}
	next := bump(m, now)
	if next.Epoch == m.Epoch { // the epoch ran out: a new producer id
		pid, err := newID()
		if err != nil {
			return Step{}, err
		}
		next.PrevProducerID, next.ProducerID, next.Epoch, next.LastEpoch = m.ProducerID, pid, 0, -1
	}
	next.State, next.Timeout = Empty, in.Timeout
	clear(next.Partitions)
	next.Start = time.Time{}
	return Step{Next: next}, nil
}

// bump is m with the next epoch (the same epoch when it ran out).
func bump(m *Meta, now time.Time) *Meta {
	next := m.clone()
	next.Update = now
	if m.Epoch < math.MaxInt16-1 {
		next.LastEpoch, next.Epoch = m.Epoch, m.Epoch+1
	}
	return next
}

// Producer names the producer a request comes from.
type Producer struct {
	ID    int64
	Epoch int16
	// Fenced is the code for an epoch older than the current one
	// (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for older versions).
	Fenced int16
}

// checkProducer is the answer to a request of pr on m when it is not m's
// current producer, 0 when it is.
func checkProducer(m *Meta, pr Producer) int16 {
	switch {
	case m == nil || m.State == Dead || m.ProducerID != pr.ID:
		return kerr.InvalidProducerIDMapping.Code
	case pr.Epoch != m.Epoch:
		return pr.Fenced
	}
	return 0
}

// addPartitions adds parts to m's transaction, beginning one if none is
// open.
func addPartitions(m *Meta, pr Producer, parts []TopicPartition, now time.Time) Step {
	if code := checkProducer(m, pr); code != 0 {
		return Step{Code: code}
	}
	if pending(m) {
		return fail(kerr.ConcurrentTransactions)
	}
	if m.State == Ongoing {
		missing := false
		for _, tp := range parts {
			if _, ok := m.Partitions[tp]; !ok {
				missing = true
			}
		}
		if !missing {
			return Step{}
		}
	}
	next := m.clone()
	if m.State != Ongoing {
		next.State, next.Start = Ongoing, now
		clear(next.Partitions)
	}
	for _, tp := range parts {
		next.Partitions[tp] = struct{}{}
	}
	next.Update = now
	return Step{Next: next}
}

// verify answers KIP-890's question of a partition leader: is tp part of
// pr's ongoing transaction? 0 if so.
func verify(m *Meta, pr Producer, tp TopicPartition) int16 {
	if code := checkProducer(m, pr); code != 0 {
		return code
	}
	if _, ok := m.Partitions[tp]; !ok || m.State != Ongoing {
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// endTxn decides m's transaction: commit or abort. tv2 is an EndTxn v5+,
// which bumps the epoch (KIP-890 part 2).
func endTxn(m *Meta, pr Producer, commit, tv2 bool, now time.Time) Step {
	if m == nil || m.State == Dead || m.ProducerID != pr.ID {
		return fail(kerr.InvalidProducerIDMapping)
	}
	if tv2 && pr.Epoch == m.LastEpoch && m.LastEpoch >= 0 {
		// A retry of an EndTxn that bumped the epoch: wait while its
		// markers are under way, then the same answer.
		switch {
		case pending(m):
			return fail(kerr.ConcurrentTransactions)
		case (m.State == CompleteCommit && commit) || (m.State == CompleteAbort && !commit):
			return retried(m)
		}
	}
	if pr.Epoch != m.Epoch {
		return Step{Code: pr.Fenced}
	}
	if pending(m) {
		// Markers still under way: of this transaction, or, under KIP-890's
		// second part, of the one before the producer's new epoch.
		return fail(kerr.ConcurrentTransactions)
	}
	want, done := PrepareAbort, CompleteAbort
	if commit {
		want, done = PrepareCommit, CompleteCommit
	}
	switch m.State {
	case Ongoing:
	case done:
		if !tv2 {
			return retried(m)
		}
		fallthrough
	case Empty, CompleteCommit, CompleteAbort:
		if !(tv2 && !commit) {
			return fail(kerr.InvalidTxnState)
		}
		// KIP-890: an abort with nothing in it still bumps the epoch.
	default:
		return fail(kerr.InvalidTxnState)
	}
	next := m.clone()
	if tv2 {
		next = bump(m, now)
		next.TV2 = true
	}
	next.State, next.Update = want, now
	return Step{Next: next, Markers: true}
}

// retried answers an EndTxn that repeats the one that decided m's
// transaction: m written again, so that the success is answered only by a
// coordinator that can still commit to its partition. Answered from memory,
// a coordinator that has lost its partition without knowing it yet (cut off
// from the controller) would take the first transaction version's EndTxn
// of the producer's next transaction, which the new coordinator holds open,
// for a retry of the last one, and tell the producer a transaction
// committed that the new coordinator later aborts.
func retried(m *Meta) Step {
	return Step{Next: m.clone()}
}

// completed is the Complete state that follows m's Prepare state once its
// markers are written.
func completed(m *Meta, now time.Time) *Meta {
	next := m.clone()
	next.State = CompleteAbort
	if m.State == PrepareCommit {
		next.State = CompleteCommit
	}
	clear(next.Partitions)
	next.Update = now
	return next
}

// expired reports whether m's transaction has run past its timeout at now
// and must be aborted.
func expired(m *Meta, now time.Time) bool {
	return m.State == Ongoing && now.Sub(m.Start) > m.Timeout
}

// abortExpired is the abort of m's timed-out transaction, with the epoch
// bumped so that the producer, which still believes it is open, is fenced.
func abortExpired(m *Meta, now time.Time) Step {
	next := bump(m, now)
	next.State = PrepareAbort
	return Step{Next: next, Markers: true}
}
