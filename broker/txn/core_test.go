package txn

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The Core on a manual clock: every event is a call, every obligation a
// field of the Output, nothing happens between two calls.

func newCore(metas map[string]*Meta) (*Core, Output) {
	c := NewCore(CoreConfig{CoordinatorEpoch: 4, AbortInterval: time.Second}, metas)
	return c, c.Start(t0)
}

// commitAll reports every append of out committed, and of what that asks,
// until no append is left; it returns the answers and jobs seen.
func commitAll(t *testing.T, c *Core, out Output, now time.Time) Output {
	t.Helper()
	var seen Output
	for len(out.Appends) > 0 || len(out.Answers) > 0 || len(out.Jobs) > 0 {
		seen.Answers = append(seen.Answers, out.Answers...)
		seen.Jobs = append(seen.Jobs, out.Jobs...)
		seen.Deadline = out.Deadline
		var next Output
		for _, a := range out.Appends {
			next = merge(next, c.Appended(a.Token, nil, now))
		}
		out = next
	}
	return seen
}

func initID(t *testing.T, c *Core, id string, pid int64, now time.Time) Answer {
	t.Helper()
	out := c.Handle(Request{Token: 1, Kind: KindInit, ID: id, Init: InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1}, NewProducerID: -1}, now)
	require.Len(t, out.Answers, 1)
	require.True(t, out.Answers[0].NeedProducerID, "a new id needs a producer id")
	require.Empty(t, out.Appends)
	out = c.Handle(Request{Token: 2, Kind: KindInit, ID: id, Init: InitRequest{Timeout: time.Minute, ProducerID: -1, Epoch: -1}, NewProducerID: pid}, now)
	require.Len(t, out.Appends, 1)
	require.Empty(t, out.Answers, "answered only once committed")
	seen := commitAll(t, c, out, now)
	require.Len(t, seen.Answers, 1)
	return seen.Answers[0]
}

func TestCoreCommit(t *testing.T) {
	c, out := newCore(nil)
	assert.Equal(t, t0.Add(time.Second), out.Deadline, "the first scan is armed")
	a := initID(t, c, "app", 50, t0)
	assert.Equal(t, Answer{Token: 2, ProducerID: 50, Epoch: 0}, a)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}

	// A verification that comes while the add is in flight waits for it.
	add := c.Handle(Request{Token: 3, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	require.Len(t, add.Appends, 1)
	ver := c.Handle(Request{Token: 4, Kind: KindVerify, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	assert.True(t, ver.Empty(), "queued behind the add")
	got := c.Appended(add.Appends[0].Token, nil, t0)
	assert.Equal(t, []Answer{{Token: 3, ProducerID: -1, Epoch: -1}, {Token: 4, Codes: []int16{0}}}, got.Answers)

	end := c.Handle(Request{Token: 5, Kind: KindEnd, ID: "app", Producer: pr, Commit: true, TV2: true}, t0)
	require.Len(t, end.Appends, 1)
	got = c.Appended(end.Appends[0].Token, nil, t0)
	require.Len(t, got.Jobs, 1, "the markers go out once the decision is committed")
	assert.Equal(t, MarkerJob{TxnID: "app", ProducerID: 50, Epoch: 1, Commit: true, CoordinatorEpoch: 4,
		Partitions: []TopicPartition{tpA}}, got.Jobs[0].MarkerJob)
	assert.Equal(t, []Answer{{Token: 5, ProducerID: 50, Epoch: 1}}, got.Answers, "EndTxn v5 returns the bumped epoch")
	m, _ := c.Meta("app")
	assert.Equal(t, PrepareCommit, m.State)

	// A write of the next transaction waits until the markers are in.
	pr.Epoch = 1
	again := c.Handle(Request{Token: 6, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	assert.Equal(t, []Answer{{Token: 6, ProducerID: -1, Epoch: -1, Code: kerr.ConcurrentTransactions.Code}}, again.Answers)

	done := c.MarkersWritten(got.Jobs[0].Token, nil, t0)
	require.Len(t, done.Appends, 1, "the Complete state")
	commitAll(t, c, done, t0)
	m, _ = c.Meta("app")
	assert.Equal(t, CompleteCommit, m.State)
	assert.Empty(t, m.Partitions)
}

func TestCoreMarkerRetry(t *testing.T) {
	c, _ := newCore(nil)
	initID(t, c, "app", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	commitAll(t, c, c.Handle(Request{Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0), t0)
	seen := commitAll(t, c, c.Handle(Request{Kind: KindEnd, ID: "app", Producer: pr}, t0), t0)
	require.Len(t, seen.Jobs, 1)

	out := c.MarkersWritten(seen.Jobs[0].Token, errors.New("leader unreachable"), t0)
	assert.True(t, out.Empty())
	assert.Equal(t, t0.Add(markerBackoff), out.Deadline, "a tick is asked for the retry")
	assert.Empty(t, c.Tick(t0.Add(markerBackoff-time.Millisecond)).Jobs, "not before the pause")
	out = c.Tick(t0.Add(markerBackoff))
	require.Len(t, out.Jobs, 1)
	assert.NotEqual(t, seen.Jobs[0].Token, out.Jobs[0].Token)
	assert.True(t, c.MarkersWritten(seen.Jobs[0].Token, nil, t0).Empty(), "the first job's late answer is void")

	// The Complete state is the id's meta as soon as it is appended; a
	// failure to commit it is left to the id's next write, or to the next
	// coordinator, which finds the Prepare state and writes the markers
	// again.
	out = c.MarkersWritten(out.Jobs[0].Token, nil, t0.Add(markerBackoff))
	require.Len(t, out.Appends, 1)
	m, _ := c.Meta("app")
	assert.Equal(t, CompleteAbort, m.State)
	assert.True(t, c.Appended(out.Appends[0].Token, kerr.NotLeaderForPartition, t0.Add(markerBackoff)).Empty())
	m, _ = c.Meta("app")
	assert.Equal(t, CompleteAbort, m.State)
}

// A request that waited for a transaction's markers goes on as soon as
// they are written: its append follows the Complete state's in the same
// Output, without waiting for that one to commit.
func TestCoreNextTransactionAfterMarkers(t *testing.T) {
	c, _ := newCore(nil)
	initID(t, c, "app", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	commitAll(t, c, c.Handle(Request{Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0), t0)
	seen := commitAll(t, c, c.Handle(Request{Kind: KindEnd, ID: "app", Producer: pr, Commit: true}, t0), t0)
	require.Len(t, seen.Jobs, 1)
	out := c.Handle(Request{Token: 7, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	require.Len(t, out.Answers, 1)
	assert.Equal(t, kerr.ConcurrentTransactions.Code, out.Answers[0].Code, "the markers are under way")
	out = c.MarkersWritten(seen.Jobs[0].Token, nil, t0)
	require.Len(t, out.Appends, 1, "the Complete state")
	out = c.Handle(Request{Token: 8, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	require.Len(t, out.Appends, 1, "the next transaction's Ongoing state, at once")
}

func TestCoreFailedAppendAnswers(t *testing.T) {
	c, _ := newCore(nil)
	initID(t, c, "app", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	out := c.Handle(Request{Token: 9, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	require.Len(t, out.Appends, 1)
	out = c.Appended(out.Appends[0].Token, kerr.NotLeaderForPartition, t0)
	assert.Equal(t, []Answer{{Token: 9, ProducerID: -1, Epoch: -1, Code: kerr.NotCoordinator.Code}}, out.Answers)
	m, _ := c.Meta("app")
	assert.Equal(t, Empty, m.State, "what did not commit is not kept")
	out = c.Handle(Request{Token: 10, Kind: KindVerify, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	assert.Equal(t, []int16{kerr.InvalidTxnState.Code}, out.Answers[0].Codes)
}

func TestCoreTickAbortsExpired(t *testing.T) {
	c, _ := newCore(nil)
	initID(t, c, "slow", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	commitAll(t, c, c.Handle(Request{Kind: KindAdd, ID: "slow", Producer: pr, Partitions: []TopicPartition{tpA}}, t0), t0)
	out := c.Tick(t0.Add(time.Second))
	assert.Empty(t, out.Appends, "within its timeout")
	assert.Equal(t, t0.Add(2*time.Second), out.Deadline)
	late := t0.Add(time.Minute + 2*time.Second)
	seen := commitAll(t, c, c.Tick(late), late)
	require.Len(t, seen.Jobs, 1)
	assert.Equal(t, int16(1), seen.Jobs[0].Epoch, "the abort bumps the epoch")
	assert.False(t, seen.Jobs[0].Commit)
	out = c.Handle(Request{Token: 3, Kind: KindAdd, ID: "slow", Producer: pr, Partitions: []TopicPartition{tpA}}, late)
	assert.Equal(t, kerr.ProducerFenced.Code, out.Answers[0].Code)
}

// A coordinator loaded with a decided transaction sends its markers at
// Start, with its own epoch.
func TestCoreStartResumesMarkers(t *testing.T) {
	c, out := newCore(map[string]*Meta{"x": meta(PrepareAbort, tpA)})
	require.Len(t, out.Jobs, 1)
	assert.Equal(t, int32(4), out.Jobs[0].CoordinatorEpoch)
	commitAll(t, c, c.MarkersWritten(out.Jobs[0].Token, nil, t0), t0)
	m, _ := c.Meta("x")
	assert.Equal(t, CompleteAbort, m.State)
}

func TestCoreExpiresIDs(t *testing.T) {
	c := NewCore(CoreConfig{AbortInterval: time.Second, IDExpiration: time.Hour}, nil)
	c.Start(t0)
	initID(t, c, "once", 50, t0)
	out := c.Tick(t0.Add(2 * time.Hour))
	require.Len(t, out.Appends, 1)
	assert.Nil(t, out.Appends[0].Record.Value, "a tombstone")
	_, ok := c.Meta("once")
	assert.True(t, ok, "until the tombstone is committed")
	commitAll(t, c, out, t0.Add(2*time.Hour))
	_, ok = c.Meta("once")
	assert.False(t, ok)
	assert.Empty(t, c.txns)
}

// A coordinator cut off from the cluster does not know yet that its
// partition has a new leader, whose coordinator holds the producer's next
// transaction open (the first transaction version does not bump the
// epoch, so its EndTxn looks like a retry of the last one). Answered from
// memory, the stale coordinator told the producer "committed" for a
// transaction the new one later aborted at its timeout (simulator seed
// 36607 of the build before this test). A retry is answered only once the
// state written again is committed; a coordinator that cannot commit
// answers the failure, and the producer finds the right coordinator.
func TestCoreRetriedEndTxnIsCommittedFirst(t *testing.T) {
	c, _ := newCore(nil)
	initID(t, c, "app", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	commitAll(t, c, c.Handle(Request{Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0), t0)
	seen := commitAll(t, c, c.Handle(Request{Kind: KindEnd, ID: "app", Producer: pr, Commit: true}, t0), t0)
	require.Len(t, seen.Jobs, 1)
	commitAll(t, c, c.MarkersWritten(seen.Jobs[0].Token, nil, t0), t0)

	out := c.Handle(Request{Token: 9, Kind: KindEnd, ID: "app", Producer: pr, Commit: true}, t0)
	require.Len(t, out.Appends, 1, "the state written again")
	assert.Empty(t, out.Answers, "not answered from memory")
	assert.Empty(t, out.Jobs, "no markers: the transaction is decided and marked")
	got := c.Appended(out.Appends[0].Token, kerr.NotLeaderForPartition, t0)
	require.Len(t, got.Answers, 1)
	assert.Equal(t, kerr.NotCoordinator.Code, got.Answers[0].Code, "the producer looks for the coordinator again")

	out = c.Handle(Request{Token: 10, Kind: KindEnd, ID: "app", Producer: pr, Commit: true}, t0)
	require.Len(t, out.Appends, 1)
	got = c.Appended(out.Appends[0].Token, nil, t0)
	assert.Equal(t, []Answer{{Token: 10, ProducerID: 50, Epoch: 0}}, got.Answers)
	m, _ := c.Meta("app")
	assert.Equal(t, CompleteCommit, m.State)
}

var tpB = TopicPartition{"b", 1}

// decidedWithAdd returns a core whose id "app" has a committed transaction
// whose markers are out (the job returned), and the producer of the next
// transaction (KIP-890's second part: the epoch bumped by EndTxn).
func decidedWithAdd(t *testing.T) (*Core, Job, Producer) {
	t.Helper()
	c, _ := newCore(nil)
	initID(t, c, "app", 50, t0)
	pr := Producer{ID: 50, Epoch: 0, Fenced: kerr.ProducerFenced.Code}
	commitAll(t, c, c.Handle(Request{Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0), t0)
	seen := commitAll(t, c, c.Handle(Request{Kind: KindEnd, ID: "app", Producer: pr, Commit: true, TV2: true}, t0), t0)
	require.Len(t, seen.Jobs, 1)
	pr.Epoch = 1
	return c, seen.Jobs[0], pr
}

// A partition leader's add (Request.Wait) that comes while the last
// transaction's markers are under way is held, not answered; once they are
// written, the Complete state and the held add's Ongoing state go out in
// the same Output, and the add is answered once its state is committed.
func TestCoreHeldAddGoesOnAtMarkers(t *testing.T) {
	c, job, pr := decidedWithAdd(t)
	out := c.Handle(Request{Token: 7, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpB}, Wait: true}, t0)
	assert.Empty(t, out.Answers, "held while the markers are under way")
	assert.Empty(t, out.Appends)
	assert.Equal(t, t0.Add(WaitMax), out.Deadline, "a tick is asked for when the hold ends")

	out = c.MarkersWritten(job.Token, nil, t0.Add(time.Millisecond))
	require.Len(t, out.Appends, 2, "the Complete state, then the held add's Ongoing state")
	assert.Empty(t, out.Answers, "the add is answered once its state is committed")
	_, got, err := decodeRecord(out.Appends[1].Record.Key, out.Appends[1].Record.Value)
	require.NoError(t, err)
	assert.Equal(t, Ongoing, got.State)
	assert.Equal(t, map[TopicPartition]struct{}{tpB: {}}, got.Partitions)

	seen := commitAll(t, c, out, t0.Add(time.Millisecond))
	assert.Equal(t, []Answer{{Token: 7, ProducerID: -1, Epoch: -1}}, seen.Answers)
	m, _ := c.Meta("app")
	assert.Equal(t, Ongoing, m.State)
}

// A held add whose markers take longer than WaitMax is answered
// CONCURRENT_TRANSACTIONS at the tick, and the leader tries again; a
// request without Wait is answered so at once, as before.
func TestCoreHeldAddGivesUp(t *testing.T) {
	c, job, pr := decidedWithAdd(t)
	out := c.Handle(Request{Token: 7, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}}, t0)
	assert.Equal(t, []Answer{{Token: 7, ProducerID: -1, Epoch: -1, Code: kerr.ConcurrentTransactions.Code}}, out.Answers, "no Wait: answered at once")
	out = c.Handle(Request{Token: 8, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}, Wait: true}, t0)
	assert.Empty(t, out.Answers)

	assert.Empty(t, c.Tick(t0.Add(WaitMax-time.Millisecond)).Answers, "held until WaitMax")
	out = c.Tick(t0.Add(WaitMax))
	assert.Equal(t, []Answer{{Token: 8, ProducerID: -1, Epoch: -1, Code: kerr.ConcurrentTransactions.Code}}, out.Answers)
	out = c.MarkersWritten(job.Token, nil, t0.Add(WaitMax))
	require.Len(t, out.Appends, 1, "only the Complete state: nothing is held any more")
}

// Only a CONCURRENT_TRANSACTIONS is held: an add of a fenced epoch is
// answered at once. ReleaseHeld (the driver closing) answers what is
// still held.
func TestCoreHeldAddFencedAndReleased(t *testing.T) {
	c, job, pr := decidedWithAdd(t)
	old := pr
	old.Epoch = 0
	out := c.Handle(Request{Token: 7, Kind: KindAdd, ID: "app", Producer: old, Partitions: []TopicPartition{tpA}, Wait: true}, t0)
	assert.Equal(t, []Answer{{Token: 7, ProducerID: -1, Epoch: -1, Code: kerr.ProducerFenced.Code}}, out.Answers,
		"an older epoch is fenced at once, not held")

	out = c.Handle(Request{Token: 8, Kind: KindAdd, ID: "app", Producer: pr, Partitions: []TopicPartition{tpA}, Wait: true}, t0)
	assert.Empty(t, out.Answers)
	out = c.ReleaseHeld(t0)
	assert.Equal(t, []Answer{{Token: 8, ProducerID: -1, Epoch: -1, Code: kerr.ConcurrentTransactions.Code}}, out.Answers)
	out = c.MarkersWritten(job.Token, nil, t0)
	require.Len(t, out.Appends, 1, "released: nothing held goes on")
}
