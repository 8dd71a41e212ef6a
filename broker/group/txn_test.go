package group_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch"
)

func txnCommitReq(g string, pid int64, offsets ...tpo) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = g, pid, 0, -1
	for _, o := range offsets {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = o.topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = o.partition, o.offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// stableFetch is fetch with RequireStable: each partition's code.
func (e *env) stableFetch(g string, partitions ...int32) []int16 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 7, true
	req.Group = g
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", partitions
	req.Topics = append(req.Topics, rt)
	var out []int16
	for _, p := range e.c.OffsetFetch(req).Topics[0].Partitions {
		out = append(out, p.ErrorCode)
	}
	return out
}

// marker ends producer pid's transaction in the coordinator's log.
func (e *env) marker(pid int64, commit bool) {
	e.t.Helper()
	_, err := e.c.WriteMarker(e.t.Context(), pid, commit, func() (int64, error) {
		return e.log.Append(batch.EncodeMarker(batch.Producer{ID: pid}, batch.Marker{Commit: commit}, start))
	})
	require.NoError(e.t, err)
}

func TestTxnOffsetsVisibleAtCommit(t *testing.T) {
	e := newEnv(t)
	for _, tp := range e.c.TxnOffsetCommit(txnCommitReq("g", 9, tpo{"t", 0, 50}, tpo{"t", 1, 60})) {
		for _, p := range tp.Partitions {
			require.Zero(t, p.ErrorCode)
		}
	}
	assert.Equal(t, []int64{-1, -1}, e.fetch("g", 0, 1), "pending until the marker")
	assert.Equal(t, []int16{kerr.UnstableOffsetCommit.Code, kerr.UnstableOffsetCommit.Code, 0}, e.stableFetch("g", 0, 1, 2))

	// A restart keeps them pending: replay holds a transaction's records
	// until its marker.
	e.restart()
	assert.Equal(t, []int64{-1, -1}, e.fetch("g", 0, 1))
	assert.Equal(t, []int16{kerr.UnstableOffsetCommit.Code, kerr.UnstableOffsetCommit.Code}, e.stableFetch("g", 0, 1))

	e.marker(9, true)
	assert.Equal(t, []int64{50, 60}, e.fetch("g", 0, 1))
	assert.Equal(t, []int16{0, 0}, e.stableFetch("g", 0, 1))
	e.restart()
	assert.Equal(t, []int64{50, 60}, e.fetch("g", 0, 1), "replay applies the records at the commit marker")
}

func TestTxnOffsetsDroppedAtAbort(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("g", "", -1, tpo{"t", 0, 10}))))
	e.c.TxnOffsetCommit(txnCommitReq("g", 9, tpo{"t", 0, 99}))
	e.marker(9, false)
	assert.Equal(t, []int64{10}, e.fetch("g", 0))
	e.restart()
	assert.Equal(t, []int64{10}, e.fetch("g", 0), "replay drops an aborted transaction's offsets")
}

// Compaction copies the live offsets but never moves the log start past
// an undecided transaction's offsets: replay after it still finds them.
func TestTxnOffsetsSurviveCompaction(t *testing.T) {
	e := newEnv(t)
	e.c.TxnOffsetCommit(txnCommitReq("g", 9, tpo{"t", 0, 77}))
	for i := range 20 {
		require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("g", "", -1, tpo{"t", 1, int64(i)}))))
	}
	require.NoError(t, e.c.Compact(e.t.Context()))
	e.restart()
	e.marker(9, true)
	assert.Equal(t, []int64{77, 19}, e.fetch("g", 0, 1))
	e.restart()
	assert.Equal(t, []int64{77, 19}, e.fetch("g", 0, 1))
}

// TestTxnOffsetsAsEvents drives the two-event forms the simulator uses:
// the commit pending from its start whatever its wait says, the marker's
// effect only at MarkerDurable.
func TestTxnOffsetsAsEvents(t *testing.T) {
	e := newEnv(t)
	end, answer := e.c.StartTxnOffsetCommit(txnCommitReq("g", 9, tpo{"t", 0, 50}))
	require.Positive(t, end)
	assert.Equal(t, []int16{kerr.UnstableOffsetCommit.Code}, e.stableFetch("g", 0), "pending once appended")
	for _, tp := range answer(kerr.RequestTimedOut) {
		assert.Equal(t, kerr.CoordinatorNotAvailable.Code, tp.Partitions[0].ErrorCode, "the wait's error, as a coordinator's write answers it")
	}
	mend, err := e.c.StartWriteMarker(9, func() (int64, error) {
		return e.log.Append(batch.EncodeMarker(batch.Producer{ID: 9}, batch.Marker{Commit: true}, start))
	})
	require.NoError(t, err)
	assert.Equal(t, []int64{-1}, e.fetch("g", 0), "not visible before the marker is durable")
	e.c.MarkerDurable(9, true, mend)
	assert.Equal(t, []int64{50}, e.fetch("g", 0))
	assert.Equal(t, []int16{0}, e.stableFetch("g", 0))
}

// A coordinator whose partition has another leader it has not heard of
// yet cannot commit anything: an OffsetFetch with RequireStable, which an
// exactly-once client starts its copy from, waits for a barrier record to
// commit and so answers that it is not the coordinator, rather than
// offsets a later leader may have moved on from. A plain OffsetFetch
// still answers from memory, as Kafka's does.
func TestStableFetchWaitsForABarrier(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, []int16{0}, commitCodes(e.c.OffsetCommit(commitReq("s", "", -1, tpo{"t", 0, 7}))))
	before := e.log.EndOffset()
	require.Equal(t, []int16{0}, e.stableFetch("s", 0))
	assert.Greater(t, e.log.EndOffset(), before, "the barrier is appended")
	assert.Equal(t, []int64{7}, e.fetch("s", 0), "and changes nothing")

	e.log.FailDurable(kerr.NotLeaderForPartition)
	assert.Equal(t, []int16{kerr.NotCoordinator.Code}, e.stableFetch("s", 0))
	assert.Equal(t, []int64{7}, e.fetch("s", 0), "without RequireStable: from memory")

	// The barrier leaves nothing behind a replay: no offset, no group.
	e.log.FailDurable(nil)
	require.Equal(t, []int16{0}, e.stableFetch("never-committed", 0))
	e.restart()
	assert.Equal(t, []int64{7}, e.fetch("s", 0))
	assert.NotContains(t, e.listGroups(), "never-committed")
}
