package producer_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/producer"
)

// txnHdr is hdr marked transactional.
func txnHdr(id int64, epoch int16, seq int32, n int32) batch.Header {
	h := hdr(id, epoch, seq, n)
	h.Attributes |= 0x10
	return h
}

// marker is the header of producer id's marker at epoch.
func marker(id int64, epoch int16) batch.Header {
	return batch.Header{ProducerID: id, ProducerEpoch: epoch, BaseSequence: -1, Attributes: 0x30, NumRecords: 1}
}

func TestTxnLifecycle(t *testing.T) {
	s := producer.NewState()
	d, err := s.Check(txnHdr(1, 0, 0, 2))
	require.NoError(t, err)
	assert.True(t, d.StartsTxn, "the first transactional batch opens the transaction")
	s.Record(txnHdr(1, 0, 0, 2), 10, 0)

	d, err = s.Check(txnHdr(1, 0, 2, 1))
	require.NoError(t, err)
	assert.False(t, d.StartsTxn, "later batches of an open transaction need no verification")
	s.Record(txnHdr(1, 0, 2, 1), 12, 0)

	_, err = s.Check(hdr(1, 0, 3, 1))
	assert.ErrorIs(t, err, kerr.InvalidTxnState, "a plain batch inside an open transaction")

	first, ok := s.FirstUnstable(100)
	require.True(t, ok)
	assert.Equal(t, int64(10), first)

	s.RecordMarker(marker(1, 0), batch.Marker{Commit: false, CoordinatorEpoch: 3}, 13, 0)
	first, ok = s.FirstUnstable(13)
	require.True(t, ok, "an ended transaction is unstable until its marker is below the high watermark")
	assert.Equal(t, int64(10), first)
	_, ok = s.FirstUnstable(14)
	assert.False(t, ok)
	assert.Equal(t, []producer.Txn{{ProducerID: 1, First: 10, Last: 13}}, s.Aborted(0, 100))
	assert.Empty(t, s.Aborted(14, 100), "marker before the read")
	assert.Empty(t, s.Aborted(0, 10), "first batch at or after the read's end")

	assert.ErrorIs(t, s.CheckMarker(1, 0, 2), kerr.TransactionCoordinatorFenced)
	assert.NoError(t, s.CheckMarker(1, 0, 3))

	// The next transaction starts again, and must be verified again.
	d, err = s.Check(txnHdr(1, 0, 3, 1))
	require.NoError(t, err)
	assert.True(t, d.StartsTxn)

	s.PruneAborted(14)
	assert.False(t, s.HasAborted())
}

func TestTxnEpochBumpFencesLateWrites(t *testing.T) {
	s := producer.NewState()
	s.Record(txnHdr(1, 4, 0, 1), 0, 0)
	// KIP-890: the coordinator ends the transaction at epoch 5.
	s.RecordMarker(marker(1, 5), batch.Marker{Commit: true}, 1, 0)
	_, err := s.Check(txnHdr(1, 4, 1, 1))
	assert.ErrorIs(t, err, kerr.InvalidProducerEpoch, "a late write of the ended transaction")
	_, err = s.Check(txnHdr(1, 5, 1, 1))
	assert.ErrorIs(t, err, kerr.OutOfOrderSequenceNumber, "the new epoch starts at sequence 0")
	d, err := s.Check(txnHdr(1, 5, 0, 1))
	require.NoError(t, err)
	assert.True(t, d.StartsTxn)
}

func TestTxnBrokerBatchesHaveNoSequence(t *testing.T) {
	s := producer.NewState()
	own := txnHdr(1, 0, -1, 2)
	d, err := s.Check(own)
	require.NoError(t, err)
	assert.True(t, d.StartsTxn)
	s.Record(own, 0, 0)
	_, err = s.Check(own)
	require.NoError(t, err, "the broker's batches are never duplicates of each other")
	e, _ := s.Producer(1)
	assert.Empty(t, e.Batches)
	assert.Equal(t, int64(0), e.TxnFirst)
}

func TestTxnExpireKeepsOpen(t *testing.T) {
	s := producer.NewState()
	s.Record(txnHdr(1, 0, 0, 1), 0, 0)
	s.Record(hdr(2, 0, 0, 1), 1, 0)
	assert.Equal(t, 1, s.Expire(1_000_000, 10))
	_, ok := s.Producer(1)
	assert.True(t, ok)
}

func TestSnapshotKeepsTransactions(t *testing.T) {
	s := producer.NewState()
	s.Record(txnHdr(1, 0, 0, 1), 0, 0)
	s.Record(txnHdr(2, 0, 0, 1), 1, 0)
	s.RecordMarker(marker(2, 0), batch.Marker{}, 2, 0)
	s.Record(txnHdr(3, 0, 0, 1), 3, 0)
	s.RecordMarker(marker(3, 0), batch.Marker{Commit: true}, 4, 0)
	got, off, err := producer.UnmarshalSnapshot(s.MarshalSnapshot(5))
	require.NoError(t, err)
	assert.Equal(t, int64(5), off)
	assert.Equal(t, s.Entries(), got.Entries())
	assert.Equal(t, s.Aborted(0, 10), got.Aborted(0, 10))
	first, ok := got.FirstUnstable(3)
	require.True(t, ok)
	assert.Equal(t, int64(0), first)
	first, _ = got.FirstUnstable(5)
	assert.Equal(t, int64(0), first, "producer 1's transaction is still open")
}

// A version 1 snapshot, from before transactions, still reads.
func TestSnapshotVersion1(t *testing.T) {
	be := binary.BigEndian
	b := []byte("MKPS")
	b = be.AppendUint16(b, 1)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint64(b, 9)
	b = be.AppendUint32(b, 1)
	b = be.AppendUint64(b, 5)  // id
	b = be.AppendUint16(b, 2)  // epoch
	b = be.AppendUint64(b, 77) // last active
	b = append(b, 1)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, 3)
	b = be.AppendUint64(b, 4)
	b = be.AppendUint64(b, 7)
	be.PutUint32(b[6:], crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)))
	s, off, err := producer.UnmarshalSnapshot(b)
	require.NoError(t, err)
	assert.Equal(t, int64(9), off)
	e, ok := s.Producer(5)
	require.True(t, ok)
	assert.Equal(t, int64(-1), e.TxnFirst)
	assert.Equal(t, []producer.BatchInfo{{FirstSeq: 0, LastSeq: 3, BaseOffset: 4, LastOffset: 7}}, e.Batches)
	_, unstable := s.FirstUnstable(0)
	assert.False(t, unstable)
}

// KIP-890's second part: the next transaction's first write can reach a
// partition before the last one's marker; it is retried, not refused.
func TestTxnNextEpochBeforeMarker(t *testing.T) {
	s := producer.NewState()
	s.Record(txnHdr(1, 4, 0, 1), 0, 0)
	_, err := s.Check(txnHdr(1, 5, 0, 1))
	assert.ErrorIs(t, err, kerr.ConcurrentTransactions)
	s.RecordMarker(marker(1, 5), batch.Marker{Commit: true}, 1, 0)
	d, err := s.Check(txnHdr(1, 5, 0, 1))
	require.NoError(t, err)
	assert.True(t, d.StartsTxn)
}
