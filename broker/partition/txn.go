package partition

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/bufpool"
	"github.com/minikafka/minikafka/broker/producer"
)

// Transactions in a partition (KIP-98, with KIP-890's verification):
//
//   - A producer's transactional batches are appended like its idempotent
//     ones. The first one of a transaction here opens it (its offset is the
//     transaction's first), and may be appended only once the transaction
//     coordinator confirmed that the partition is part of that transaction:
//     Append answers a *VerifyNeeded, the broker asks the coordinator, and
//     AppendVerified appends with the guard it was given. A marker for the
//     producer that lands in between voids the guard, so that a write that
//     raced its transaction's end cannot open a transaction nobody ends.
//   - The coordinator ends the transaction with a marker (AppendMarker),
//     which the producer state records: committed or aborted.
//   - The last stable offset (LSO) is the first offset of a transaction
//     open or ended above the high watermark, or the high watermark when
//     there is none. A read_committed read stops there and returns the
//     aborted transactions whose records it may hold, which the consumer
//     drops (Kafka's fetch rule).

// ErrVerificationVoided: a marker for the producer reached the partition
// while its write was being verified. The marker may have ended the very
// transaction the write belongs to (a late write, refused), or an earlier
// one whose marker was still on its way (KIP-890's second part: the
// producer begins a transaction as soon as the last is decided): the
// caller verifies again, and the coordinator tells which. Wrapped with
// kerr.InvalidTxnState.
var ErrVerificationVoided = errors.New("the producer's transaction ended while the write was verified")

// VerifyNeeded is Append's answer to a batch that opens its producer's
// transaction here: verify with the coordinator that the partition is in
// the producer's transaction, then call AppendVerified with Guard.
type VerifyNeeded struct {
	ProducerID int64
	Epoch      int16
	Guard      uint64
}

func (v *VerifyNeeded) Error() string {
	return fmt.Sprintf("producer %d epoch %d: the first batch of a transaction here needs the coordinator's verification", v.ProducerID, v.Epoch)
}

// takeGuardLocked lets the batch h, which opens a transaction, be
// appended when guard is the verification under way for its producer; with
// guard 0 it starts one and answers *VerifyNeeded.
func (p *Partition) takeGuardLocked(h batch.Header, guard uint64) error {
	if guard == 0 {
		p.guards++
		if p.verifying == nil {
			p.verifying = map[int64]uint64{}
		}
		p.verifying[h.ProducerID] = p.guards
		return &VerifyNeeded{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Guard: p.guards}
	}
	if p.verifying[h.ProducerID] != guard {
		return p.wrap(fmt.Errorf("producer %d: %w: %w", h.ProducerID, ErrVerificationVoided, kerr.InvalidTxnState))
	}
	delete(p.verifying, h.ProducerID)
	return nil
}

// AppendVerified is Append for records whose transaction the coordinator
// verified under guard (from Append's *VerifyNeeded).
func (p *Partition) AppendVerified(records []byte, guard uint64) (Appended, error) {
	a, err := p.appendGuarded(records, guard)
	var again *VerifyNeeded
	if errors.As(err, &again) {
		// Cannot happen with a nonzero guard; a programmer's error.
		panic(fmt.Sprintf("partition %s-%d: verified append asked for verification", p.topic, p.index))
	}
	return a, err
}

// DropGuard forgets a verification that failed.
func (p *Partition) DropGuard(producerID int64, guard uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verifying[producerID] == guard {
		delete(p.verifying, producerID)
	}
}

// AppendMarker appends the marker that ends producer pr's transaction in
// this partition, from the coordinator at coordinatorEpoch, and returns
// the offset just past it. Only the leader takes one. A marker from an
// older coordinator than the producer's last (kerr.TransactionCoordinatorFenced)
// or at an older producer epoch (kerr.InvalidProducerEpoch) is refused.
func (p *Partition) AppendMarker(pr batch.Producer, m batch.Marker) (int64, error) {
	b := batch.EncodeMarker(pr, m, p.clock.Now())
	h, err := batch.ParseHeader(b)
	if err != nil {
		panic(err) // our own encoding
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.leadingLocked(); err != nil {
		return 0, err
	}
	if err := p.producers.CheckMarker(pr.ID, pr.Epoch, m.CoordinatorEpoch); err != nil {
		return 0, p.wrap(err)
	}
	delete(p.verifying, pr.ID)
	a, err := p.appendLocked([][]byte{b}, []batch.Header{h})
	if err != nil {
		return 0, err
	}
	if p.markerLanded != nil {
		close(p.markerLanded)
		p.markerLanded = nil
	}
	return a.LastOffset + 1, nil
}

// MarkerLanded returns a channel closed once the next marker is appended
// here. A transactional write refused with kerr.ConcurrentTransactions
// (its producer's last transaction's marker is still on its way) can wait
// on it, taken before the write, to try again the moment the marker is
// in. Nothing else closes it: a waiter bounds its wait.
func (p *Partition) MarkerLanded() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.markerLanded == nil {
		p.markerLanded = make(chan struct{})
	}
	return p.markerLanded
}

// AppendOwn appends a batch the broker built itself inside a producer's
// transaction (batch.EncodeTxn: the group coordinator's offsets), or a
// plain one (batch.Encode), checked against the producer state for its
// epoch only. It returns the offset just past it.
func (p *Partition) AppendOwn(b []byte) (int64, error) {
	h, err := batch.ParseStored(b)
	if err != nil {
		return 0, p.wrap(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.leadingLocked(); err != nil {
		return 0, err
	}
	if _, err := p.producers.Check(h); err != nil {
		return 0, p.wrap(err)
	}
	a, err := p.appendLocked([][]byte{b}, []batch.Header{h})
	if err != nil {
		return 0, err
	}
	return a.LastOffset + 1, nil
}

// noteTxnsLocked keeps the readers' view of the transactions current after
// batch h was recorded; the caller holds mu.
func (p *Partition) noteTxnsLocked(h batch.Header) {
	if h.Attributes.Transactional() {
		p.txnSeen.Store(true)
	}
	p.unstable.Store(int64(p.producers.Unstable()))
}

// LastStableOffset is the offset below which every record's transaction,
// if any, is decided and committed: what read_committed consumers read up
// to (the high watermark when no transaction is open).
func (p *Partition) LastStableOffset() int64 {
	return p.lastStable(p.wm.get())
}

func (p *Partition) lastStable(hw int64) int64 {
	if p.unstable.Load() == 0 || p.mut.has(mutLSOAtHW) {
		return hw
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first, ok := p.producers.FirstUnstable(hw)
	p.unstable.Store(int64(p.producers.Unstable()))
	if ok && first < hw {
		return first
	}
	return hw
}

// ReadCommitted is ReadLeased for a read_committed consumer: batches
// entirely below the last stable offset, and the aborted transactions
// among them (Read.Aborted), whose records the consumer drops.
func (p *Partition) ReadCommitted(offset int64, maxBytes int, lease *bufpool.Lease) (Read, error) {
	if !p.txnSeen.Load() {
		return p.ReadLeased(offset, maxBytes, lease)
	}
	if p.gone.Load() {
		return Read{}, p.closedErr()
	}
	hw := p.wm.get()
	lso := p.lastStable(hw)
	start, end := p.log.StartOffset(), p.log.EndOffset()
	r := Read{Records: []byte{}, HighWatermark: hw, LastStableOffset: lso, LogStartOffset: start}
	if offset < start || offset > end {
		return r, p.wrap(fmt.Errorf("offset %d not in [%d, %d]: %w", offset, start, end, kerr.OffsetOutOfRange))
	}
	if offset >= lso {
		return r, nil
	}
	recs, err := p.readRecords(offset, maxBytes, lso, lease)
	if err != nil {
		return r, p.storageErr("read", err)
	}
	r.Records = recs
	upper := lso
	if bs, err := batch.SplitWhole(recs); err == nil && len(bs) > 0 {
		h, err := batch.ParseHeader(bs[len(bs)-1])
		if err == nil {
			upper = h.LastOffset() + 1
		}
	}
	p.mu.Lock()
	r.Aborted = p.producers.Aborted(offset, upper)
	p.mu.Unlock()
	return r, nil
}

// Aborted is an aborted transaction a read_committed read returns.
type Aborted = producer.Txn
