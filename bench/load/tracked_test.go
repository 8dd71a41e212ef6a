package load

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrackedAndAudit(t *testing.T) {
	eachServer(t, func(t *testing.T, c Client) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, EnsureTopic(ctx, c, "tracked", 3))
		tr, err := StartTracked(ctx, TrackedConfig{Client: c, Topic: "tracked", Partitions: 3, Rate: 2000, RecordBytes: 64})
		require.NoError(t, err)
		for len(tr.Writes(0)) < 10 {
			require.NoError(t, ctx.Err(), "the producer acknowledges batches")
			time.Sleep(10 * time.Millisecond) // waiting for a producer in a plumbing test
		}
		res := tr.Stop(10 * time.Second)
		require.NotEmpty(t, res.Acked)
		parts := map[int32]bool{}
		for _, w := range tr.Writes(0) {
			parts[w.Partition] = true
			assert.Positive(t, w.Records)
		}
		assert.Len(t, parts, 3, "round-robin over every partition")
		assert.Empty(t, tr.Writes(len(tr.Writes(0))), "nothing past the end")

		a, err := Audit(ctx, c, "tracked", res.Acked, nil)
		require.NoError(t, err)
		assert.Equal(t, AuditResult{Acked: len(res.Acked), Consumed: a.Consumed}, a, "nothing lost, duplicated or misplaced")

		// An acknowledgement the topic does not hold is lost; two of one
		// partition with their offsets swapped are misplaced.
		var a0, a1 string
		for id, ack := range res.Acked {
			if ack.Partition != 0 {
				continue
			}
			if a0 == "" {
				a0 = id
			} else if a1 == "" {
				a1 = id
			}
		}
		require.NotEmpty(t, a1, "two records on partition 0")
		forged := map[string]Ack{"tracked-999999999": {Partition: 0, Offset: 0}, a0: res.Acked[a1], a1: res.Acked[a0]}
		a, err = Audit(ctx, c, "tracked", forged, nil)
		require.NoError(t, err)
		assert.Equal(t, 1, a.Lost)
		assert.Equal(t, 2, a.Misplaced)

		short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancelShort()
		_, err = Audit(short, c, "tracked", map[string]Ack{a0: {Partition: 0, Offset: 1 << 40}}, nil)
		assert.Error(t, err, "an offset beyond the end is never covered")
	})
}

func TestTrackedConfig(t *testing.T) {
	_, err := StartTracked(context.Background(), TrackedConfig{Topic: "t", Partitions: 1, Rate: 1, RecordBytes: 4})
	assert.ErrorIs(t, err, ErrConfig)
}
