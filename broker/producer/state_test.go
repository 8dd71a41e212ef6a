package producer_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch"
	"github.com/minikafka/minikafka/broker/producer"
)

// hdr is a batch header of n records from producer id at epoch, first
// sequence seq.
func hdr(id int64, epoch int16, seq int32, n int32) batch.Header {
	return batch.Header{
		ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq,
		LastOffsetDelta: n - 1, NumRecords: n, MaxTimestamp: 1000,
	}
}

// step is one batch offered to the state: Check, then Record at the log end
// when accepted as new.
type step struct {
	h       batch.Header
	want    *kerr.Error // nil: accepted (new or duplicate)
	dup     bool
	dupBase int64 // the original base offset of a duplicate
}

func TestCheck(t *testing.T) {
	const p = 7
	cases := []struct {
		name  string
		steps []step
	}{
		{"in sequence", []step{{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 0, 3, 2)}, {h: hdr(p, 0, 5, 1)}}},
		{"retry of the last batch is a duplicate", []step{
			{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 0, 3, 2)}, {h: hdr(p, 0, 3, 2), dup: true, dupBase: 3},
		}},
		{"retry of an older batch inside the window", []step{
			{h: hdr(p, 0, 0, 1)}, {h: hdr(p, 0, 1, 1)}, {h: hdr(p, 0, 2, 1)}, {h: hdr(p, 0, 0, 1), dup: true, dupBase: 0},
		}},
		{"the window holds five batches", []step{
			{h: hdr(p, 0, 0, 1)}, {h: hdr(p, 0, 1, 1)}, {h: hdr(p, 0, 2, 1)}, {h: hdr(p, 0, 3, 1)}, {h: hdr(p, 0, 4, 1)},
			{h: hdr(p, 0, 0, 1), dup: true, dupBase: 0},
			{h: hdr(p, 0, 5, 1)},
			{h: hdr(p, 0, 1, 1), dup: true, dupBase: 1},
			{h: hdr(p, 0, 0, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{"gap", []step{{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 0, 4, 1), want: kerr.OutOfOrderSequenceNumber}}},
		{"same first sequence, different length", []step{{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 0, 0, 2), want: kerr.OutOfOrderSequenceNumber}}},
		{"old epoch", []step{{h: hdr(p, 2, 0, 1)}, {h: hdr(p, 1, 1, 1), want: kerr.InvalidProducerEpoch}}},
		{"new epoch restarts at zero", []step{
			{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 1, 0, 1)}, {h: hdr(p, 1, 1, 1)},
			{h: hdr(p, 0, 3, 1), want: kerr.InvalidProducerEpoch},
			{h: hdr(p, 1, 0, 1), dup: true, dupBase: 3},
		}},
		{"new epoch must start at zero", []step{{h: hdr(p, 0, 0, 3)}, {h: hdr(p, 1, 3, 1), want: kerr.OutOfOrderSequenceNumber}}},
		{"unknown producer starts anywhere", []step{{h: hdr(p, 4, 1000, 2)}, {h: hdr(p, 4, 1002, 1)}}},
		{"sequence wraps at int32 max", []step{
			{h: hdr(p, 0, math.MaxInt32-1, 2)}, {h: hdr(p, 0, 0, 1)}, {h: hdr(p, 0, math.MaxInt32-1, 2), dup: true, dupBase: 0},
		}},
		{"batch spanning the wrap", []step{{h: hdr(p, 0, math.MaxInt32-1, 4)}, {h: hdr(p, 0, 2, 1)}}},
		{"producers are independent", []step{
			{h: hdr(p, 0, 0, 1)}, {h: hdr(p+1, 0, 0, 1)}, {h: hdr(p, 0, 1, 1)}, {h: hdr(p+1, 0, 2, 1), want: kerr.OutOfOrderSequenceNumber},
		}},
		{"non-idempotent batches are not checked", []step{{h: hdr(-1, -1, -1, 3)}, {h: hdr(-1, -1, -1, 3)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := producer.NewState()
			var end int64
			for i, st := range c.steps {
				d, err := s.Check(st.h)
				if st.want != nil {
					require.ErrorIs(t, err, st.want, "step %d", i)
					continue
				}
				require.NoError(t, err, "step %d", i)
				require.Equal(t, st.dup, d.Duplicate, "step %d duplicate", i)
				if d.Duplicate {
					assert.Equal(t, st.dupBase, d.BaseOffset, "step %d original base", i)
					assert.Equal(t, st.dupBase+int64(st.h.LastOffsetDelta), d.LastOffset, "step %d original last", i)
					continue
				}
				s.Record(st.h, end, 1000)
				end += int64(st.h.NumRecords)
			}
		})
	}
}

func TestCheckDoesNotChangeState(t *testing.T) {
	s := producer.NewState()
	_, err := s.Check(hdr(1, 0, 0, 2))
	require.NoError(t, err)
	assert.Equal(t, 0, s.Len(), "a checked but never recorded batch (failed append) leaves no trace")
	s.Record(hdr(1, 0, 0, 2), 10, 1000)
	_, err = s.Check(hdr(1, 0, 2, 1))
	require.NoError(t, err)
	_, err = s.Check(hdr(1, 0, 2, 1))
	require.NoError(t, err, "checking twice is not a duplicate: only Record remembers")
}

func TestRecordKeepsLastFive(t *testing.T) {
	s := producer.NewState()
	for i := int32(0); i < 8; i++ {
		s.Record(hdr(3, 0, i*2, 2), int64(i)*2, 1000)
	}
	e, ok := s.Producer(3)
	require.True(t, ok)
	require.Len(t, e.Batches, producer.Window)
	assert.Equal(t, producer.BatchInfo{FirstSeq: 6, LastSeq: 7, BaseOffset: 6, LastOffset: 7}, e.Batches[0])
	assert.Equal(t, producer.BatchInfo{FirstSeq: 14, LastSeq: 15, BaseOffset: 14, LastOffset: 15}, e.Batches[4])

	s.Record(hdr(3, 1, 0, 1), 100, 1000)
	e, _ = s.Producer(3)
	assert.Equal(t, int16(1), e.Epoch)
	assert.Len(t, e.Batches, 1, "a new epoch forgets the old epoch's batches")
	s.Record(hdr(3, 0, 16, 1), 101, 1000)
	e, _ = s.Producer(3)
	assert.Equal(t, int16(1), e.Epoch, "replaying an older epoch's batch is ignored")
	assert.Len(t, e.Batches, 1)
}

func TestExpire(t *testing.T) {
	s := producer.NewState()
	s.Record(hdr(1, 0, 0, 1), 0, 1_000)
	s.Record(hdr(2, 0, 0, 1), 1, 90_000)
	assert.Equal(t, 1, s.Expire(100_000, 50_000))
	_, ok := s.Producer(1)
	assert.False(t, ok)
	_, ok = s.Producer(2)
	assert.True(t, ok, "expiry follows the broker's clock, not the batch timestamps")
}
