package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka/broker"
	"github.com/minikafka/minikafka/broker/brokertest"
	"github.com/minikafka/minikafka/engine"
)

// TestOffsetsTopicCompacted: groups commit round after round through the
// wire; the coordinator compacts __consumer_offsets through the partition
// layer on every engine, so the log stays within a few records per live
// key, its old prefix is gone, and after a restart every group resumes at
// its last commit.
func TestOffsetsTopicCompacted(t *testing.T) {
	for _, name := range engine.Names() {
		d, err := engine.Lookup(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Engine(name), brokertest.Configure(func(c *broker.Config) {
				c.Groups.OffsetsCompactMinBytes = 1  // compact on the ratio alone
				c.Cluster.OffsetsTopicPartitions = 1 // both groups in partition 0
			}))
			b.CreateTopic(t, "orders", 4)
			adm := b.Admin(t)
			ctx := context.Background()
			groups := []string{"billing", "shipping"}
			const rounds = 60
			for r := range rounds {
				for _, g := range groups {
					offs := kadm.Offsets{}
					for p := range int32(4) {
						offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(r), LeaderEpoch: -1})
					}
					resp, err := adm.CommitOffsets(ctx, g, offs)
					require.NoError(t, err)
					require.NoError(t, resp.Error())
				}
			}
			p, err := b.Partitions().Partition("__consumer_offsets", 0)
			require.NoError(t, err)
			live := int64(len(groups) * 4) // offsets only: these groups have no members
			require.Eventually(t, func() bool {
				return p.EndOffset()-p.StartOffset() < 4*live
			}, 10*time.Second, time.Millisecond, "the log is compacted to fewer than 4 records per live key")
			assert.Greater(t, p.StartOffset(), int64(0))
			_, err = p.Read(0, 1<<20)
			assert.ErrorIs(t, err, kerr.OffsetOutOfRange, "the old prefix is gone")
			t.Logf("%s: __consumer_offsets holds [%d, %d) after %d commits", name, p.StartOffset(), p.EndOffset(), rounds*len(groups)*4)

			if !d.Caps.Durable {
				return
			}
			b.Restart(t)
			for _, g := range groups {
				fetched, err := b.Admin(t).FetchOffsets(ctx, g)
				require.NoError(t, err)
				for p := range int32(4) {
					o, ok := fetched.Lookup("orders", p)
					require.True(t, ok, "%s orders-%d", g, p)
					assert.Equal(t, int64(rounds-1), o.At, fmt.Sprintf("%s orders-%d", g, p))
				}
			}
		})
	}
}
