package node

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	_ "github.com/minikafka/minikafka/engines/memory"
)

// followers opens n partitions of one topic on broker 2, following broker 1.
func followers(t *testing.T, n int) []*partition.Partition {
	m, err := partition.OpenManager(partition.Config{Dir: t.TempDir(), Engine: "memory", Manual: true, Clock: clock.NewManual(t0)})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	id := uuid.New()
	var out []*partition.Partition
	for i := range n {
		p, err := m.Ensure(partition.Spec{Topic: "t", TopicID: id, Index: int32(i)})
		require.NoError(t, err)
		_, err = p.SetState(partition.ReplicaState{
			Self: 2, BrokerEpoch: 5, Lead: true, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 1,
			Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1, Now: t0,
		})
		require.NoError(t, err)
		out = append(out, p)
	}
	return out
}

func TestFetcherBuildsOneFetchPerLeader(t *testing.T) {
	parts := followers(t, 3)
	fs := NewFetchers(2)
	started, _ := fs.Follow(t0, parts[0], 1)
	require.NotNil(t, started)
	again, _ := fs.Follow(t0, parts[1], 1)
	require.Nil(t, again, "one fetcher per leader")
	req, sent := started.Build(t0, 5)
	require.Len(t, sent, 2)
	require.Equal(t, int32(2), req.ReplicaState.ID)
	require.Equal(t, int64(5), req.ReplicaState.Epoch)
	require.Len(t, req.Topics, 1)
	require.Len(t, req.Topics[0].Partitions, 2)
	require.Equal(t, int32(3), req.Topics[0].Partitions[0].CurrentLeaderEpoch)
	require.Equal(t, int32(ReplicaFetchWait/time.Millisecond), req.MaxWaitMillis)

	// A partition added during a long poll interrupts it; the failure
	// that follows, and the one after it, retry at once; then a backoff.
	interrupted := 0
	started.BeginFlight(req, func() { interrupted++ })
	fs.Follow(t0, parts[2], 1)
	require.Equal(t, 1, interrupted)
	errCancelled := errors.New("cancelled")
	require.Zero(t, started.EndFlight(errCancelled))
	req, _ = started.Build(t0, 5)
	started.BeginFlight(req, func() {})
	require.Zero(t, started.EndFlight(errCancelled), "the fetch after an interrupted one may fail on its connection")
	req, _ = started.Build(t0, 5)
	started.BeginFlight(req, func() {})
	require.Equal(t, ReplicaFetchBackoff, started.EndFlight(errCancelled))

	// Moving every partition away stops the fetcher.
	var stopped *Fetcher
	for _, p := range parts {
		_, stopped = fs.Follow(t0, p, -1)
	}
	require.Same(t, started, stopped)
}

func TestFetcherHoldsBackAfterErrors(t *testing.T) {
	parts := followers(t, 2)
	fs := NewFetchers(2)
	f, _ := fs.Follow(t0, parts[0], 1)
	fs.Follow(t0, parts[1], 1)
	req, sent := f.Build(t0, 5)
	f.BeginFlight(req, func() {})
	require.Zero(t, f.EndFlight(nil))
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = req.Topics[0].TopicID
	for _, rp := range req.Topics[0].Partitions {
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = rp.Partition
		if rp.Partition == 0 {
			sp.ErrorCode = kerr.NotLeaderForPartition.Code // the leader has not caught up with the metadata
		} else {
			sp.ErrorCode = kerr.KafkaStorageError.Code
		}
		rt.Partitions = append(rt.Partitions, sp)
	}
	resp.Topics = append(resp.Topics, rt)
	f.Handle(t0, resp, sent, slog.New(slog.DiscardHandler))
	_, sent = f.Build(t0, 5)
	require.Empty(t, sent, "both held back")
	require.Equal(t, t0.Add(metadataLagBackoff), f.NextWake(t0), "the metadata lag's short backoff first")
	req, sent = f.Build(t0.Add(metadataLagBackoff), 5)
	require.Len(t, sent, 1)
	require.Equal(t, int32(ReplicaFetchBackoff/time.Millisecond)-int32(metadataLagBackoff/time.Millisecond), req.MaxWaitMillis,
		"a long poll ends when the other partition's backoff does")
}

// hwResponse is a fetch response without records for parts, each with
// the high watermark hw.
func hwResponse(parts []*partition.Partition, hw int64) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = parts[0].Key().TopicID
	for _, p := range parts {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.HighWatermark, rp.LogStartOffset = p.Key().Index, hw, 0
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// The follower throttle leaves its partitions out of a fetch once its
// quota is spent, shares what is left among them, counts what they fetch,
// and never touches a partition it does not throttle, nor one that has
// reached its leader's high watermark (about to join the ISR).
func TestFetcherLeavesThrottledPartitionsOut(t *testing.T) {
	parts := followers(t, 3)
	q := NewQuota()
	q.SetLimit(3000)
	throttledKey := map[partition.Key]bool{parts[0].Key(): true, parts[1].Key(): true}
	fs := NewFetchers(2)
	fs.SetThrottle(&FollowerThrottle{Quota: q, Throttled: func(k partition.Key) bool { return throttledKey[k] }})
	var f *Fetcher
	for _, p := range parts {
		if started, _ := fs.Follow(t0, p, 1); started != nil {
			f = started
		}
	}
	// The leader says its high watermark is 100: every follower is behind.
	_, sent := f.Build(t0, 5)
	f.Handle(t0, hwResponse(parts, 100), sent, slog.New(slog.DiscardHandler))

	q.Record(t0, 1000)
	req, sent := f.Build(t0, 5)
	require.Len(t, sent, 2, "the first throttled partition takes the allowance, the second waits")
	require.NotContains(t, sent, parts[1].Key())
	maxBytes := map[int32]int32{}
	for _, rp := range req.Topics[0].Partitions {
		maxBytes[rp.Partition] = rp.PartitionMaxBytes
	}
	require.Equal(t, map[int32]int32{0: 2000, 2: replicaFetchBytes}, maxBytes)

	// An answer with 2500 bytes for a throttled partition and 5000 for the
	// other: only the first counts, and the quota is spent.
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = parts[0].Key().TopicID
	for i, n := range []int{2500, 0, 5000} {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.HighWatermark, rp.LogStartOffset = int32(i), 0, 0
		if n > 0 {
			rp.RecordBatches = make([]byte, n)
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	f.Handle(t0, resp, sent, slog.New(slog.DiscardHandler))
	require.True(t, q.Exceeded(t0))
	require.Equal(t, int64(3000-1000-2500), q.Allowance(t0))

	// The bytes were no records: the partitions back off, then fetch.
	t1 := t0.Add(ReplicaFetchBackoff)
	_, sent = f.Build(t1, 5)
	require.Len(t, sent, 1, "only the unthrottled partition")
	require.Contains(t, sent, parts[2].Key())

	throttledKey[parts[2].Key()] = true
	_, sent = f.Build(t1, 5)
	require.Empty(t, sent)
	require.Equal(t, ThrottlePoll, f.IdlePause(), "held by the throttle alone")

	later := t0.Add(QuotaWindow)
	_, sent = f.Build(later, 5)
	require.Len(t, sent, 1, "the window moved on: the first throttled partition takes all of it")
	_, sent = f.Build(later.Add(QuotaWindow), 5)
	require.Len(t, sent, 1)

	// A follower that reaches the leader's high watermark while unthrottled
	// (its topic's UUID may sort anywhere among the others, which take the
	// allowance) and is throttled from then on.
	caught := followers(t, 1)[0]
	fs.Follow(t0, caught, 1)
	_, sent = f.Build(later.Add(2*QuotaWindow), 5)
	require.Contains(t, sent, caught.Key())
	one := hwResponse([]*partition.Partition{caught}, 3)
	one.Topics[0].Partitions[0].RecordBatches = batchtest.Plain(t, 3) // offsets 0-2: at the leader's HW
	f.Handle(later.Add(2*QuotaWindow), one, sent, slog.New(slog.DiscardHandler))
	caught.Sync() // manual partitions sync when told
	throttledKey[caught.Key()] = true
	end := later.Add(3 * QuotaWindow)
	q.Record(end, 1<<20)
	_, sent = f.Build(end, 5)
	require.Len(t, sent, 1, "at the leader's high watermark: not held")
	require.Contains(t, sent, caught.Key())
}

// A broker that closes its fetchers while its reconciler still removes
// partitions: Unfollow after Close finds nothing to stop (it used to find a
// leader with no fetcher and panic).
func TestUnfollowAfterClose(t *testing.T) {
	parts := followers(t, 2)
	fs := NewFetchers(2)
	started, _ := fs.Follow(t0, parts[0], 1)
	fs.Follow(t0, parts[1], 1)
	require.Equal(t, []*Fetcher{started}, fs.Close())
	require.Nil(t, fs.Unfollow(parts[0].Key()))
	started, stopped := fs.Follow(t0, parts[1], 3)
	require.Nil(t, started)
	require.Nil(t, stopped)
}
