package broker

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker/batch/batchtest"
	"github.com/minikafka/minikafka/broker/partition"
	"github.com/minikafka/minikafka/clock"
	"github.com/minikafka/minikafka/engines/memory"
)

// TestOffsetsLogIsReplicated: the coordinator's log counts a write as done
// only once it is below the high watermark (on every ISR member, as Kafka
// writes offsets with acks=all), and a coordinator loading it reads to the
// log end, past a high watermark that has not caught up yet (a new leader).
func TestOffsetsLogIsReplicated(t *testing.T) {
	m, err := partition.OpenManager(partition.Config{Dir: t.TempDir(), Engine: memory.Name, RetentionCheckInterval: -1})
	require.NoError(t, err)
	defer m.Close()
	p, err := m.Ensure(partition.Spec{Topic: offsetsTopic, TopicID: uuid.New(), Index: 0})
	require.NoError(t, err)
	epoch := int32(0)
	lead := func(isr ...int32) {
		epoch++
		_, err := p.SetState(partition.ReplicaState{
			Self: 1, BrokerEpoch: 1, Lead: true, Leader: 1, LeaderEpoch: 1, PartitionEpoch: epoch,
			Replicas: []int32{1, 2}, ISR: isr, MinISR: 1, Now: time.Now(),
		})
		require.NoError(t, err)
	}
	lead(1, 2) // broker 2 is in the ISR and has fetched nothing
	clk := clock.NewManual(time.Now())
	log := coordLog{p, clk}
	end, err := log.Append(batchtest.Plain(t, 3))
	require.NoError(t, err)
	require.Equal(t, int64(3), end)
	assert.Zero(t, p.HighWatermark())

	data, err := log.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Len(t, batchtest.MustDecode(t, data), 3, "loading reads above the high watermark")
	data, err = log.Read(end, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, data, "nothing at the log end")

	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, log.WaitDurable(short, end), context.DeadlineExceeded, "durable here is not enough while broker 2 lacks it")

	// offsets.commit.timeout.ms: on the broker's clock, the wait gives up
	// with a code the client retries on.
	waited := make(chan error, 1)
	go func() { waited <- log.WaitDurable(context.Background(), end) }()
	require.Eventually(t, func() bool { return clk.Pending() == 1 }, 5*time.Second, time.Millisecond)
	clk.Advance(offsetsCommitTimeout - time.Millisecond)
	select {
	case err := <-waited:
		t.Fatalf("gave up before the timeout: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	select {
	case err := <-waited:
		require.Error(t, err)
		assert.ErrorIs(t, err, kerr.RequestTimedOut, "which the coordinator answers with COORDINATOR_NOT_AVAILABLE")
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting past offsets.commit.timeout.ms")
	}

	lead(1) // broker 2 leaves the ISR: the leader alone commits
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	require.NoError(t, log.WaitDurable(ctx, end))
}
