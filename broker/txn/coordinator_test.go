package txn_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/group/grouptest"
	"github.com/minikafka/minikafka/broker/txn"
	"github.com/minikafka/minikafka/clock"
)

// markers records the jobs it is given; while failing is set it refuses
// them.
type markers struct {
	mu      sync.Mutex
	jobs    []txn.MarkerJob
	failing bool
}

func (m *markers) Write(_ context.Context, job txn.MarkerJob) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing {
		return errors.New("leader unreachable")
	}
	m.jobs = append(m.jobs, job)
	return nil
}

func (m *markers) written() []txn.MarkerJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]txn.MarkerJob(nil), m.jobs...)
}

func (m *markers) fail(on bool) {
	m.mu.Lock()
	m.failing = on
	m.mu.Unlock()
}

type harness struct {
	log       *grouptest.Log
	clk       *clock.Manual
	mk        *markers
	next      int64
	compactAt int64
}

func (h *harness) open(t *testing.T, epoch int32) *txn.Coordinator {
	c, err := txn.Open(txn.Config{
		Log: h.log, Clock: h.clk, Markers: h.mk, CoordinatorEpoch: epoch, AbortInterval: time.Hour, CompactMinBytes: h.compactAt,
		NewProducerID: func(context.Context) (int64, error) { h.next++; return h.next, nil },
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func newHarness() *harness {
	return &harness{log: grouptest.NewMemLog(), clk: clock.NewManual(time.UnixMilli(1_796_083_200_000)), mk: &markers{}, next: 1000}
}

// state waits until id's state is want.
func state(t *testing.T, c *txn.Coordinator, id string, want txn.State) *txn.Meta {
	t.Helper()
	var m *txn.Meta
	require.Eventually(t, func() bool {
		var ok bool
		m, ok = c.Meta(id)
		return ok && m.State == want
	}, 5*time.Second, time.Millisecond, "state %v", want)
	return m
}

var tp = txn.TopicPartition{Topic: "t", Partition: 1}

func TestCoordinatorCommitAndReload(t *testing.T) {
	h := newHarness()
	c := h.open(t, 7)
	ctx := t.Context()
	pid, epoch, code := c.InitProducerID(ctx, "app", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	require.Zero(t, code)
	assert.Equal(t, int64(1001), pid)
	pr := txn.Producer{ID: pid, Epoch: epoch, Fenced: kerr.ProducerFenced.Code}
	require.Zero(t, c.AddPartitions("app", pr, []txn.TopicPartition{tp}))
	assert.Equal(t, []int16{0}, c.Verify("app", pr, []txn.TopicPartition{tp}))
	_, _, code = c.EndTxn("app", pr, true, false)
	require.Zero(t, code)
	state(t, c, "app", txn.CompleteCommit)
	assert.Equal(t, []txn.MarkerJob{{TxnID: "app", ProducerID: pid, Epoch: epoch, Commit: true, CoordinatorEpoch: 7,
		Partitions: []txn.TopicPartition{tp}}}, h.mk.written())

	// Another coordinator of the partition finds the same state.
	require.NoError(t, c.Close())
	c2 := h.open(t, 8)
	m := state(t, c2, "app", txn.CompleteCommit)
	assert.Equal(t, pid, m.ProducerID)
	_, e2, code := c2.InitProducerID(ctx, "app", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	require.Zero(t, code)
	assert.Equal(t, epoch+1, e2, "a new instance gets the next epoch")
}

// A coordinator that lost its partition before the markers were written:
// the next one writes them and completes the transaction.
func TestCoordinatorResumesMarkers(t *testing.T) {
	h := newHarness()
	c := h.open(t, 1)
	ctx := t.Context()
	pid, epoch, _ := c.InitProducerID(ctx, "app", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	pr := txn.Producer{ID: pid, Epoch: epoch, Fenced: kerr.ProducerFenced.Code}
	require.Zero(t, c.AddPartitions("app", pr, []txn.TopicPartition{tp}))
	h.mk.fail(true)
	_, _, code := c.EndTxn("app", pr, false, false)
	require.Zero(t, code, "the abort is decided once it is in the log")
	assert.Equal(t, kerr.ConcurrentTransactions.Code, c.AddPartitions("app", pr, []txn.TopicPartition{tp}))
	require.NoError(t, c.Close())
	assert.Empty(t, h.mk.written())

	h.mk.fail(false)
	c2 := h.open(t, 2)
	state(t, c2, "app", txn.CompleteAbort)
	jobs := h.mk.written()
	require.Len(t, jobs, 1)
	assert.False(t, jobs[0].Commit)
	assert.Equal(t, int32(2), jobs[0].CoordinatorEpoch, "written as the new coordinator")
}

func TestCoordinatorAbortsExpired(t *testing.T) {
	h := newHarness()
	c := h.open(t, 1)
	pid, epoch, _ := c.InitProducerID(t.Context(), "slow", txn.InitRequest{Timeout: time.Second, ProducerID: -1, Epoch: -1})
	pr := txn.Producer{ID: pid, Epoch: epoch, Fenced: kerr.ProducerFenced.Code}
	require.Zero(t, c.AddPartitions("slow", pr, []txn.TopicPartition{tp}))
	c.AbortExpired()
	state(t, c, "slow", txn.Ongoing)
	h.clk.Advance(2 * time.Second)
	c.AbortExpired()
	m := state(t, c, "slow", txn.CompleteAbort)
	assert.Equal(t, epoch+1, m.Epoch, "the abort bumped the epoch")
	assert.Equal(t, kerr.ProducerFenced.Code, c.AddPartitions("slow", pr, []txn.TopicPartition{tp}), "the producer is fenced")
	jobs := h.mk.written()
	require.Len(t, jobs, 1)
	assert.Equal(t, epoch+1, jobs[0].Epoch, "the markers carry the new epoch")
}

func TestCoordinatorUnknownIDs(t *testing.T) {
	h := newHarness()
	c := h.open(t, 1)
	pr := txn.Producer{ID: 5, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	_, _, code := c.EndTxn("nobody", pr, true, false)
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, c.AddPartitions("nobody", pr, []txn.TopicPartition{tp}))
	require.NoError(t, c.Close())
	assert.Equal(t, kerr.NotCoordinator.Code, c.AddPartitions("nobody", pr, []txn.TopicPartition{tp}))
}

// __transaction_state is compacted: many transactions later the log holds
// about the live ids' records, and a reload finds the same state.
func TestCoordinatorCompacts(t *testing.T) {
	h := newHarness()
	h.compactAt = 1
	c := h.open(t, 1)
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		pid, epoch, code := c.InitProducerID(ctx, id, txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
		require.Zero(t, code)
		pr := txn.Producer{ID: pid, Epoch: epoch, Fenced: kerr.ProducerFenced.Code}
		for range 20 {
			require.Zero(t, c.AddPartitions(id, pr, []txn.TopicPartition{tp}))
			_, _, code := c.EndTxn(id, pr, true, false)
			require.Zero(t, code)
			state(t, c, id, txn.CompleteCommit)
		}
	}
	require.Eventually(t, func() bool { return h.log.Deletes() > 0 }, 5*time.Second, time.Millisecond, "never compacted")
	require.NoError(t, c.Close())
	assert.Less(t, h.log.EndOffset()-h.log.StartOffset(), int64(20), "the log holds about the live ids")
	c2 := h.open(t, 2)
	for _, id := range []string{"a", "b"} {
		m := state(t, c2, id, txn.CompleteCommit)
		assert.Equal(t, int16(0), m.Epoch)
	}
}

func TestCoordinatorExpiresUnusedIDs(t *testing.T) {
	h := newHarness()
	c := h.open(t, 1)
	ctx := t.Context()
	pid, _, _ := c.InitProducerID(ctx, "once", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	c.InitProducerID(ctx, "busy", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	h.clk.Advance(txn.DefaultIDExpiration - time.Hour)
	_, e, code := c.InitProducerID(ctx, "busy", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	require.Zero(t, code)
	require.Equal(t, int16(1), e)
	h.clk.Advance(2 * time.Hour)
	c.ExpireIDs()
	_, ok := c.Meta("once")
	assert.False(t, ok, "unused for longer than transactional.id.expiration.ms")
	_, ok = c.Meta("busy")
	assert.True(t, ok)

	// Gone for good: a reload does not bring it back, and its producer
	// starts afresh.
	require.NoError(t, c.Close())
	c2 := h.open(t, 2)
	_, ok = c2.Meta("once")
	assert.False(t, ok)
	pid2, epoch, code := c2.InitProducerID(ctx, "once", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	require.Zero(t, code)
	assert.NotEqual(t, pid, pid2)
	assert.Zero(t, epoch)
}

// A partition leader's add (AddForWrite) that comes while the last
// transaction's markers are under way waits for them and goes on once they
// are in; Close answers one still waiting CONCURRENT_TRANSACTIONS.
func TestCoordinatorAddForWriteWaitsForMarkers(t *testing.T) {
	h := newHarness()
	c := h.open(t, 1)
	pid, epoch, _ := c.InitProducerID(t.Context(), "app", txn.InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1})
	pr := txn.Producer{ID: pid, Epoch: epoch, Fenced: kerr.ProducerFenced.Code}
	require.Zero(t, c.AddForWrite("app", pr, []txn.TopicPartition{tp}))
	h.mk.fail(true)
	_, next, code := c.EndTxn("app", pr, true, true)
	require.Zero(t, code)
	pr.Epoch = next

	got := make(chan int16, 1)
	go func() { got <- c.AddForWrite("app", pr, []txn.TopicPartition{tp}) }()
	require.Eventually(t, func() bool { return txn.Held(c, "app") == 1 }, 5*time.Second, time.Millisecond)
	select {
	case code := <-got:
		t.Fatalf("answered %d while the markers are under way", code)
	default:
	}
	h.mk.fail(false)
	appends := h.log.Appends()
	h.clk.Advance(150 * time.Millisecond) // the markers' retry is due, not WaitMax
	select {
	case code := <-got:
		assert.Zero(t, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the add did not go on once the markers were in")
	}
	m := state(t, c, "app", txn.Ongoing)
	assert.Equal(t, map[txn.TopicPartition]struct{}{tp: {}}, m.Partitions)
	assert.Equal(t, appends+1, h.log.Appends(), "the Complete state and the next Ongoing state in one batch")

	// Held at Close: answered, not left hanging.
	h.mk.fail(true)
	_, next, code = c.EndTxn("app", pr, false, true)
	require.Zero(t, code)
	pr.Epoch = next
	go func() { got <- c.AddForWrite("app", pr, []txn.TopicPartition{tp}) }()
	require.Eventually(t, func() bool { return txn.Held(c, "app") == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Close())
	select {
	case code := <-got:
		assert.Contains(t, []int16{kerr.ConcurrentTransactions.Code, kerr.NotCoordinator.Code}, code)
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a held add waiting")
	}
}
