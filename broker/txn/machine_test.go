package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.UnixMilli(1_796_083_200_000)

func ids(next ...int64) func() (int64, error) {
	return func() (int64, error) {
		id := next[0]
		next = next[1:]
		return id, nil
	}
}

var tpA = TopicPartition{"a", 0}

// meta is a transactional id at state with producer 7, epoch 3.
func meta(state State, parts ...TopicPartition) *Meta {
	m := &Meta{ID: "x", ProducerID: 7, Epoch: 3, LastEpoch: 2, PrevProducerID: -1, Timeout: time.Minute,
		State: state, Partitions: map[TopicPartition]struct{}{}, Start: t0}
	for _, tp := range parts {
		m.Partitions[tp] = struct{}{}
	}
	return m
}

var pr = Producer{ID: 7, Epoch: 3, Fenced: kerr.ProducerFenced.Code}

func TestInitProducer(t *testing.T) {
	in := InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1, Fenced: kerr.ProducerFenced.Code}
	t.Run("new id", func(t *testing.T) {
		st, err := initProducer(nil, "x", in, t0, time.Hour, ids(100))
		require.NoError(t, err)
		require.NotNil(t, st.Next)
		assert.Equal(t, int64(100), st.Next.ProducerID)
		assert.Equal(t, int16(0), st.Next.Epoch)
		assert.Equal(t, Empty, st.Next.State)
	})
	t.Run("timeout above the maximum", func(t *testing.T) {
		st, _ := initProducer(nil, "x", InitRequest{Timeout: 2 * time.Hour}, t0, time.Hour, ids(100))
		assert.Equal(t, kerr.InvalidTransactionTimeout.Code, st.Code)
		assert.Nil(t, st.Next)
	})
	t.Run("bumps the epoch of a decided id", func(t *testing.T) {
		st, err := initProducer(meta(CompleteCommit, tpA), "x", in, t0, time.Hour, ids())
		require.NoError(t, err)
		assert.Equal(t, int16(4), st.Next.Epoch)
		assert.Equal(t, int16(3), st.Next.LastEpoch)
		assert.Empty(t, st.Next.Partitions)
		assert.Zero(t, st.Code)
	})
	t.Run("aborts an open transaction first", func(t *testing.T) {
		st, err := initProducer(meta(Ongoing, tpA), "x", in, t0, time.Hour, ids())
		require.NoError(t, err)
		assert.Equal(t, kerr.ConcurrentTransactions.Code, st.Code)
		assert.Equal(t, PrepareAbort, st.Next.State)
		assert.Equal(t, int16(4), st.Next.Epoch, "the abort fences the old producer")
		assert.True(t, st.Markers)
	})
	t.Run("waits for markers", func(t *testing.T) {
		st, _ := initProducer(meta(PrepareCommit, tpA), "x", in, t0, time.Hour, ids())
		assert.Equal(t, kerr.ConcurrentTransactions.Code, st.Code)
		assert.Nil(t, st.Next)
	})
	t.Run("epoch exhausted: a new producer id", func(t *testing.T) {
		m := meta(CompleteAbort)
		m.Epoch = 32766
		st, err := initProducer(m, "x", in, t0, time.Hour, ids(200))
		require.NoError(t, err)
		assert.Equal(t, int64(200), st.Next.ProducerID)
		assert.Equal(t, int16(0), st.Next.Epoch)
		assert.Equal(t, int64(7), st.Next.PrevProducerID)
	})
	t.Run("KIP-360: a stale producer is fenced", func(t *testing.T) {
		stale := in
		stale.ProducerID, stale.Epoch = 7, 1
		st, _ := initProducer(meta(CompleteCommit), "x", stale, t0, time.Hour, ids())
		assert.Equal(t, kerr.ProducerFenced.Code, st.Code)
		assert.Nil(t, st.Next)
	})
	t.Run("KIP-360: a retry of the last bump gets the same answer", func(t *testing.T) {
		retry := in
		retry.ProducerID, retry.Epoch = 7, 2
		st, _ := initProducer(meta(Empty), "x", retry, t0, time.Hour, ids())
		assert.Zero(t, st.Code)
		assert.Nil(t, st.Next)
	})
}

func TestAddPartitionsAndVerify(t *testing.T) {
	st := addPartitions(meta(CompleteCommit), pr, []TopicPartition{tpA}, t0.Add(time.Second))
	require.NotNil(t, st.Next)
	assert.Equal(t, Ongoing, st.Next.State)
	assert.Equal(t, t0.Add(time.Second), st.Next.Start)
	assert.Zero(t, verify(st.Next, pr, tpA))
	assert.Equal(t, kerr.InvalidTxnState.Code, verify(st.Next, pr, TopicPartition{"b", 0}))

	again := addPartitions(st.Next, pr, []TopicPartition{tpA}, t0)
	assert.Nil(t, again.Next, "nothing new to write")

	old := pr
	old.Epoch = 2
	assert.Equal(t, kerr.ProducerFenced.Code, addPartitions(meta(Ongoing), old, []TopicPartition{tpA}, t0).Code)
	other := pr
	other.ID = 8
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, addPartitions(meta(Ongoing), other, []TopicPartition{tpA}, t0).Code)
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, addPartitions(nil, pr, []TopicPartition{tpA}, t0).Code)
	assert.Equal(t, kerr.ConcurrentTransactions.Code, addPartitions(meta(PrepareAbort), pr, []TopicPartition{tpA}, t0).Code)
	assert.Equal(t, kerr.ProducerFenced.Code, verify(meta(Ongoing, tpA), old, tpA))
}

func TestEndTxn(t *testing.T) {
	cases := []struct {
		name    string
		m       *Meta
		commit  bool
		tv2     bool
		epoch   int16
		code    *kerr.Error
		state   State
		newEpch int16
	}{
		{"commit", meta(Ongoing, tpA), true, false, 3, nil, PrepareCommit, 3},
		{"abort", meta(Ongoing, tpA), false, false, 3, nil, PrepareAbort, 3},
		{"KIP-890: commit bumps the epoch", meta(Ongoing, tpA), true, true, 3, nil, PrepareCommit, 4},
		{"retry of a finished commit", meta(CompleteCommit), true, false, 3, nil, CompleteCommit, 3},
		{"commit of an aborted one", meta(CompleteAbort), true, false, 3, kerr.InvalidTxnState, CompleteAbort, 3},
		{"markers under way", meta(PrepareCommit, tpA), true, false, 3, kerr.ConcurrentTransactions, PrepareCommit, 3},
		{"nothing begun", meta(Empty), true, false, 3, kerr.InvalidTxnState, Empty, 3},
		{"KIP-890: an empty abort bumps the epoch", meta(Empty), false, true, 3, nil, PrepareAbort, 4},
		{"old epoch", meta(Ongoing, tpA), true, false, 2, kerr.ProducerFenced, Ongoing, 3},
		{"KIP-890: retry after the bump", meta(CompleteCommit), true, true, 2, nil, CompleteCommit, 3},
		{"KIP-890: retry while the markers are under way", meta(PrepareCommit, tpA), true, true, 2, kerr.ConcurrentTransactions, PrepareCommit, 3},
		{"KIP-890: the next transaction's end before the last one's markers", meta(PrepareCommit, tpA), false, true, 3, kerr.ConcurrentTransactions, PrepareCommit, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pr
			p.Epoch = c.epoch
			st := endTxn(c.m, p, c.commit, c.tv2, t0)
			want := int16(0)
			if c.code != nil {
				want = c.code.Code
			}
			assert.Equal(t, want, st.Code)
			got := c.m
			if st.Next != nil {
				got = st.Next
				assert.Equal(t, got.State != c.m.State, st.Markers, "markers for a decision, none for a retry")
			}
			if c.code == nil && c.state == c.m.State {
				// A retry: the state written again, answered once committed.
				require.NotNil(t, st.Next, "a retry answered from memory")
				assert.Equal(t, *c.m, *st.Next)
			}
			assert.Equal(t, c.state, got.State)
			assert.Equal(t, c.newEpch, got.Epoch)
		})
	}
}

func TestCompletedAndExpired(t *testing.T) {
	m := meta(Ongoing, tpA)
	assert.False(t, expired(m, t0.Add(time.Minute)))
	assert.True(t, expired(m, t0.Add(time.Minute+time.Millisecond)))
	st := abortExpired(m, t0.Add(2*time.Minute))
	assert.Equal(t, PrepareAbort, st.Next.State)
	assert.Equal(t, int16(4), st.Next.Epoch, "the timed-out producer is fenced")
	done := completed(st.Next, t0)
	assert.Equal(t, CompleteAbort, done.State)
	assert.Empty(t, done.Partitions)
	assert.Equal(t, CompleteCommit, completed(meta(PrepareCommit, tpA), t0).State)
}

func TestRecordRoundTrip(t *testing.T) {
	m := meta(Ongoing, tpA, TopicPartition{"b", 2})
	m.Update, m.TV2 = t0.Add(time.Second), true
	id, got, err := decodeRecord(recordKey(m.ID), m.recordValue())
	require.NoError(t, err)
	assert.Equal(t, "x", id)
	assert.Equal(t, m, got)
	id, got, err = decodeRecord(recordKey("gone"), nil)
	require.NoError(t, err)
	assert.Equal(t, "gone", id)
	assert.Nil(t, got)
}
