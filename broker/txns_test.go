package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/txn"
)

// A transaction's markers go to every leader at once: here each leader's
// write waits until every other leader's has begun, which only writes
// sent together get past. Each partition's code is told, and a failed
// leader or partition fails the job.
func TestMarkersToEveryLeaderAtOnce(t *testing.T) {
	byLeader := map[int32][]txn.TopicPartition{
		1: {{Topic: "t", Partition: 0}},
		2: {{Topic: "t", Partition: 1}, {Topic: "t", Partition: 4}},
		3: {{Topic: "u", Partition: 2}},
	}
	begun := make(chan int32, len(byLeader))
	all := make(chan struct{})
	go func() {
		for range byLeader {
			<-begun
		}
		close(all)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	write := func(ctx context.Context, leader int32, tps []txn.TopicPartition) ([]int16, error) {
		begun <- leader
		select {
		case <-all:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		codes := make([]int16, len(tps))
		if leader == 2 {
			codes[1] = kerr.InvalidProducerEpoch.Code // a newer epoch there: done
		}
		return codes, nil
	}
	seen := map[txn.TopicPartition]int16{}
	err := eachLeader(ctx, byLeader, write, func(tp txn.TopicPartition, code int16) { seen[tp] = code })
	require.NoError(t, err, "every leader's write must be under way before any ends")
	assert.Len(t, seen, 4)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, seen[txn.TopicPartition{Topic: "t", Partition: 4}])

	failing := func(_ context.Context, leader int32, tps []txn.TopicPartition) ([]int16, error) {
		switch leader {
		case 1:
			return nil, errors.New("unreachable")
		case 3:
			return []int16{kerr.NotLeaderForPartition.Code}, nil
		}
		return make([]int16, len(tps)), nil
	}
	err = eachLeader(ctx, byLeader, failing, func(txn.TopicPartition, int16) {})
	require.Error(t, err)
	assert.ErrorContains(t, err, "broker 1")
	assert.ErrorIs(t, err, kerr.NotLeaderForPartition)
}
